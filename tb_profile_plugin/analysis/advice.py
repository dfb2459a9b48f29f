"""Diagnostics about how steps were found, and recommendations backed by the profile's numbers.

Each recommendation is shown only when the numbers call for it and quotes its evidence
(practices from the TensorFlow profiler guide and the tf.data performance guide).
"""

from __future__ import annotations

import numpy as np

from tb_profile_plugin.analysis.breakdown import category_ps, verdict
from tb_profile_plugin.analysis.host_analysis import HostAnalysis

STEP_MARKER_CODE = (
    "for step, batch in enumerate(dataset):\n"
    "    with tf.profiler.experimental.Trace('train', step_num=step, _r=1):\n"
    "        train_step(batch)"
)
KERNEL_LAUNCH_PERCENT = 3.0
ALL_OTHERS_PERCENT = 3.0
LOW_16BIT_PERCENT = 10.0
TINY_KERNEL_US = 10.0
MANY_KERNELS_PER_STEP = 1000


def step_diagnostics(host: str, analysis: HostAnalysis) -> tuple[list[str], list[str]]:
    """(warnings, info) about how steps were found in one host's profile."""
    warnings: list[str] = []
    info: list[str] = []
    steps = analysis.steps
    prefix = f"{host}: " if host else ""
    if analysis.root_rule == "keras" and len(steps):
        info.append(
            f"{prefix}no step markers were recorded; steps are the {len(steps)} executions of "
            "the Keras 3 step function (__inference_*step_on_iterator*), which is how "
            "model.fit runs one step.")
    if len(steps) == 0:
        looked = ("events with _r=1 (tf.profiler.experimental.Trace('train', step_num=N, _r=1)), "
                  "TraceContext/SessionRun/RunGraph, TensorFlow loop iterations, and Keras 3 "
                  "step functions (__inference_*step_on_iterator*)")
        warnings.append(
            f"{prefix}no training step could be found. Looked for {looked}; "
            + ("some were found but none ran any compute. " if analysis.num_groups else "")
            + "Mark each step in your training loop:\n" + STEP_MARKER_CODE)
    if steps.num_partial_dropped:
        info.append(
            f"{prefix}the first and the last step were left out: the capture started and "
            "stopped inside them, so they are partial.")
    if steps.num_dropped:
        info.append(
            f"{prefix}{steps.num_dropped} marked step(s) ran no "
            + ("device" if analysis.has_device else "host")
            + " compute and are not counted.")
    return warnings, info


def recommendations(analysis: HostAnalysis) -> list[str]:
    steps = analysis.steps
    out: list[str] = []
    total = float(steps.duration_ps.sum())
    if total <= 0:
        return ["Mark training steps so step time can be analysed:\n" + STEP_MARKER_CODE]
    cats = {k: 100.0 * float(v.sum()) / total for k, v in category_ps(steps).items()}
    v = verdict(steps)
    if v.input_bound in ("highly", "moderately"):
        out.append(
            f"Input takes {v.input_percent:.1f} % of the step time. In the tf.data pipeline: "
            "add .prefetch(tf.data.AUTOTUNE) at the end; run map with "
            "num_parallel_calls=tf.data.AUTOTUNE; cache() data that fits in memory after "
            "expensive steps; read files with interleave(num_parallel_calls=tf.data.AUTOTUNE). "
            "The tf.data bottleneck analysis view names the slowest transformation.")
    if cats["kernel_launch"] >= KERNEL_LAUNCH_PERCENT:
        out.append(
            f"Kernel launch takes {cats['kernel_launch']:.1f} % of the step time: set "
            "TF_GPU_THREAD_MODE=gpu_private so kernels are launched from dedicated threads.")
    precision_total = analysis.ops.compute_16bit_ps + analysis.ops.compute_32bit_ps
    if analysis.has_device and precision_total > 0:
        share16 = 100.0 * analysis.ops.compute_16bit_ps / precision_total
        if share16 < LOW_16BIT_PERCENT:
            out.append(
                f"Only {share16:.1f} % of device compute time is 16-bit: enable mixed precision "
                "(tf.keras.mixed_precision.set_global_policy('mixed_float16')) to use Tensor "
                "Cores.")
    if cats["all_others"] >= ALL_OTHERS_PERCENT:
        out.append(
            f"{cats['all_others']:.1f} % of the step time is outside any recorded op ('All "
            "others'): usually Python between steps. Wrap the step in tf.function, and compute "
            "metrics or log every few steps rather than every step.")
    if analysis.has_device:
        out.extend(_device_hints(analysis, len(steps)))
    return out


def _device_hints(analysis: HostAnalysis, num_steps: int) -> list[str]:
    out: list[str] = []
    device = analysis.ops.device.without_idle()
    nchw = [n for n in device.name if "nchw" in n.lower()]
    if nchw:
        out.append(
            f"{len(nchw)} device op(s) run NCHW convolutions (e.g. {nchw[0]}): use the "
            "channels-last layout (NHWC), which Tensor Cores prefer.")
    if num_steps and analysis.num_device_kernels:
        kernels_per_step = analysis.num_device_kernels / num_steps
        total_us = float(np.sum(device.total_ps)) / 1e6
        avg_us = total_us / max(int(np.sum(device.occurrences)), 1)
        if kernels_per_step >= MANY_KERNELS_PER_STEP and avg_us < TINY_KERNEL_US:
            out.append(
                f"About {kernels_per_step:.0f} kernels run per step, averaging {avg_us:.1f} us: "
                "launch overhead dominates. Use a larger batch, or compile the step with "
                "tf.function(jit_compile=True) so XLA fuses kernels.")
    return out
