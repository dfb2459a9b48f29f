"""Diagnostics about how steps were found, and recommendations backed by the profile's numbers.

Each recommendation is shown only when the numbers call for it and carries its evidence
(`Advice.evidence`, analysis/evidence.py); advice the profile contradicts is withheld
with why (the input advice is checked against the tf.data pipeline: analysis/advice/input_advice.py)
(practices from the TensorFlow profiler guide, the tf.data performance guide and JAX's
profiling and performance guides). Advice is given in the words of the program's framework
(`HostAnalysis.framework`, xspace/producers/ `detect_framework`):

| framework  | mark steps with                                   | remedies name                 |
|------------|---------------------------------------------------|-------------------------------|
| TensorFlow | `tf.profiler.experimental.Trace('train',          | tf.data, tf.function,         |
|            | step_num=step, _r=1)`                             | TF_GPU_THREAD_MODE, mixed     |
|            |                                                   | precision policy              |
| Keras      | nothing: model.fit marks steps; what to check     | steps_per_execution,          |
|            | (capture window, run_eagerly, steps_per_execution)| callbacks, jit_compile        |
| JAX        | `jax.profiler.StepTraceAnnotation('train',        | device prefetch (device_put,  |
|            | step_num=step)`                                   | prefetch_to_device), jax.jit, |
|            |                                                   | bfloat16; tf.data only when   |
|            |                                                   | the profile shows tf.data     |
| unknown    | both TensorFlow's and JAX's marker                | as TensorFlow                 |

A JAX program is never told to use tf.function, nor tf.data unless its profile shows a
tf.data pipeline (`Iterator::*` events).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from tb_profile_plugin.analysis.advice.input_advice import input_advice
from tb_profile_plugin.analysis.evidence import AdviceSet, Evidence
from tb_profile_plugin.analysis.hosts.host_analysis import HostAnalysis
from tb_profile_plugin.analysis.steps.breakdown import category_ps, host_bound_percent, verdict
from tb_profile_plugin.analysis.steps.execution_steps import RULE as EXECUTION_RULE
from tb_profile_plugin.xspace.producers import Framework

if TYPE_CHECKING:
    from tb_profile_plugin.analysis.advice.verdict_basis import TfDataVerdict

STEP_MARKER_CODE = (
    "for step, batch in enumerate(dataset):\n"
    "    with tf.profiler.experimental.Trace('train', step_num=step, _r=1):\n"
    "        train_step(batch)"
)
JAX_STEP_MARKER_CODE = (
    "for step, batch in enumerate(batches):\n"
    "    with jax.profiler.StepTraceAnnotation('train', step_num=step):\n"
    "        state = train_step(state, batch)"
)
#: Keras 3 has no profile_batch: profile a few steps of model.fit from a callback.
KERAS_PROFILE_CODE = (
    "class ProfileSteps(keras.callbacks.Callback):\n"
    "    def on_train_batch_begin(self, batch, logs=None):\n"
    "        if batch == 10:\n"
    "            tf.profiler.experimental.start(logdir)\n"
    "    def on_train_batch_end(self, batch, logs=None):\n"
    "        if batch == 15:\n"
    "            tf.profiler.experimental.stop()\n"
    "\n"
    "model.fit(dataset, epochs=1, callbacks=[ProfileSteps()])"
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
    if analysis.root_rule == EXECUTION_RULE and len(steps):
        info.append(
            f"{prefix}to set the step boundaries yourself, mark each training step: "
            + ("with jax.profiler.StepTraceAnnotation('train', step_num=step): around it."
               if analysis.framework == Framework.JAX else
               "with tf.profiler.experimental.Trace('train', step_num=step, _r=1): around it."))
    if len(steps) == 0:
        warnings.append(_no_steps_warning(prefix, analysis))
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


_TF_LOOKED_FOR = (
    "events with _r=1 (tf.profiler.experimental.Trace('train', step_num=N, _r=1)), "
    "TraceContext/SessionRun/RunGraph, TensorFlow loop iterations, and Keras 3 step functions "
    "(__inference_*step_on_iterator*)")
_JAX_LOOKED_FOR = (
    "step markers (events with _r=1 and a step_num, which jax.profiler.StepTraceAnnotation "
    "writes) and a jitted function executed more than once (its executions would be the steps)")


def _no_steps_warning(prefix: str, analysis: HostAnalysis) -> str:
    """"No training step could be found": what was looked for and, in the program's framework,
    how to mark steps (prose, then code after the first line break)."""
    framework = analysis.framework
    found_empty = "some were found but none ran any compute. " if analysis.num_groups else ""
    if framework == Framework.JAX:
        return (f"{prefix}no training step could be found in this JAX program (detected from "
                f"{analysis.framework_evidence}). Looked for {_JAX_LOOKED_FOR}; {found_empty}"
                + step_marking(framework))
    if framework == Framework.KERAS:
        return (f"{prefix}no training step could be found in this Keras program (detected from "
                f"{analysis.framework_evidence}). Looked for {_TF_LOOKED_FOR}; {found_empty}"
                + step_marking(framework))
    return (f"{prefix}no training step could be found. Looked for {_TF_LOOKED_FOR}; "
            f"{found_empty}" + step_marking(framework))


def step_marking(framework: Framework) -> str:
    """How the framework's programs mark their training steps: prose, a line break, code."""
    if framework == Framework.JAX:
        return ("Mark each step in your training loop with jax.profiler.StepTraceAnnotation "
                "(one step per iteration, with the device work it dispatched):\n"
                + JAX_STEP_MARKER_CODE)
    if framework == Framework.KERAS:
        return ("model.fit marks each step itself (one execution of its step function per "
                "step), so check the capture: it must cover whole steps while fit runs (start "
                "the profiler after training began and stop it a few steps later); the model "
                "must not be compiled with run_eagerly=True (eager steps run no step function); "
                "with steps_per_execution=N one step is N batches. In a custom training loop, "
                "mark each step with tf.profiler.experimental.Trace('train', step_num=step, "
                "_r=1). To profile steps 10-15 of fit:\n" + KERAS_PROFILE_CODE)
    if framework == Framework.UNKNOWN:
        return ("Mark each step in your training loop (TensorFlow or JAX):\n# TensorFlow\n"
                + STEP_MARKER_CODE + "\n# JAX\n" + JAX_STEP_MARKER_CODE)
    return "Mark each step in your training loop:\n" + STEP_MARKER_CODE


def recommendations(analysis: HostAnalysis) -> list[str]:
    """The texts of `advice_for(analysis)`."""
    return advice_for(analysis).texts()


def advice_for(analysis: HostAnalysis, tf_data: TfDataVerdict | None = None) -> AdviceSet:
    """Advice the profile's numbers call for, each with the evidence it rests on, in the
    framework's words (the module docstring's table); advice the profile contradicts or gives
    no evidence for is withheld, with why. `tf_data`: the tf.data view's verdict, quoted
    where the caller computed it (one host)."""
    steps = analysis.steps
    out = AdviceSet()
    total = float(steps.duration_ps.sum())
    jax = analysis.framework == Framework.JAX
    if total <= 0:
        no_steps = Evidence("steps found", "0")
        if analysis.framework == Framework.TENSORFLOW:
            out.give("mark_steps", "Mark training steps so step time can be analysed:\n"
                     + STEP_MARKER_CODE, no_steps)
        else:
            out.give("mark_steps", step_marking(analysis.framework), no_steps)
        return out
    cats = {k: 100.0 * float(v.sum()) / total for k, v in category_ps(steps).items()}
    v = verdict(steps)
    out.extend(input_advice(v.input_bound, v.input_percent, analysis.framework,
                            analysis.tf_data_names, tf_data))
    _host_bound(out, analysis, cats)
    one_call = _one_jitted_call_per_step(analysis) if jax else None
    if cats["kernel_launch"] >= KERNEL_LAUNCH_PERCENT:
        launch = Evidence("kernel launch share of step time", f"{cats['kernel_launch']:.1f} %")
        if one_call is not None:
            out.withhold("jit_whole_step", f"the step already runs as one jitted call "
                                           f"({one_call.value})")
            out.give("kernel_launch",
                     f"Kernel launch takes {cats['kernel_launch']:.1f} % of the step time, and "
                     f"the step is already one jitted call ({one_call.value}): this is the "
                     "runtime launching its kernels. A larger batch, or several steps per call "
                     "(jax.lax.scan over them), spreads it over more work.", launch, one_call)
        else:
            out.give("kernel_launch",
                     f"Kernel launch takes {cats['kernel_launch']:.1f} % of the step time: jit "
                     "the whole training step (one jax.jit around it, not many small jitted "
                     "calls) so that XLA fuses ops into fewer kernels." if jax else
                     f"Kernel launch takes {cats['kernel_launch']:.1f} % of the step time: set "
                     "TF_GPU_THREAD_MODE=gpu_private so kernels are launched from dedicated "
                     "threads.", launch)
    precision_total = analysis.ops.compute_16bit_ps + analysis.ops.compute_32bit_ps
    if analysis.has_device and precision_total > 0:
        share16 = 100.0 * analysis.ops.compute_16bit_ps / precision_total
        if share16 < LOW_16BIT_PERCENT:
            out.give(
                "mixed_precision",
                f"Only {share16:.1f} % of device compute time is 16-bit: compute in bfloat16 "
                "(cast parameters and inputs with .astype(jnp.bfloat16), or dtype=jnp.bfloat16 "
                "in Flax modules) so that matrix multiplications and convolutions use Tensor "
                "Cores." if jax else
                f"Only {share16:.1f} % of device compute time is 16-bit: enable mixed precision "
                "(tf.keras.mixed_precision.set_global_policy('mixed_float16')) to use Tensor "
                "Cores.", Evidence("16-bit share of device compute time", f"{share16:.1f} %"))
    if cats["all_others"] >= ALL_OTHERS_PERCENT:
        _all_others(out, cats["all_others"], analysis)
    if analysis.has_device:
        _device_hints(out, analysis, len(steps))
    return out


def _one_jitted_call_per_step(analysis: HostAnalysis) -> Evidence | None:
    """The jitted function with the most device time, when it ran at most once per step (the
    steps, the partial ones included): the step is already one jitted call."""
    if not analysis.jitted or analysis.num_groups <= 0:
        return None
    top = analysis.jitted[0]
    steps = max(analysis.num_groups, len(analysis.steps))
    if top.calls > steps or top.device_fraction < 0.5:
        return None
    return Evidence("jitted calls per step", f"{top.module}, {top.calls} calls in {steps} steps")


def _host_bound(out: AdviceSet, analysis: HostAnalysis, cats: dict[str, float]) -> None:
    """The device waits on the host (breakdown.py `host_bound_percent`): say so, with the host
    work that holds most of the step (analysis/ops/host_hotspots.py)."""
    host = host_bound_percent(analysis.steps)
    if host is None:
        return
    device = cats["device_compute"] + cats["device_to_device"] + cats["device_collectives"]
    evidence = [Evidence("host compute share of step time", f"{host:.1f} %"),
                Evidence("device busy share of step time", f"{device:.1f} %")]
    where = ""
    if analysis.host_hotspots:
        top = analysis.host_hotspots[0]
        where = f" The most host time per step is in {top.name}: {top.self_ms_per_step:.2f} ms."
        evidence.append(Evidence("largest host self time per step",
                                 ", ".join(f"{h.name} {h.self_ms_per_step:.2f} ms"
                                           for h in analysis.host_hotspots)))
    if analysis.framework == Framework.JAX:
        how = ("Prepare batches ahead of the step on other threads (a prefetching data "
               "loader), keep NumPy work out of the training loop or move it into the jitted "
               "step, and avoid a host sync every step (float(loss), printing device values).")
    else:
        how = ("Feed the model through tf.data with prefetch, and move Python work out of the "
               "training loop or into the tf.function.")
    out.give("host_bound",
             f"The device is busy only {device:.1f} % of each step while the host computes for "
             f"{host:.1f} %: the device waits on the host.{where} {how}", *evidence)


def _all_others(out: AdviceSet, percent: float, analysis: HostAnalysis) -> None:
    """'All others' advice; TensorFlow's "wrap the step in tf.function" only when the profile
    shows no tf.function call."""
    share = Evidence("'All others' share of step time", f"{percent:.1f} %")
    text = _all_others_advice(percent, analysis.framework)
    one_call = (_one_jitted_call_per_step(analysis) if analysis.framework == Framework.JAX
                else None)
    if one_call is not None:
        out.give("all_others",
                 _all_others_head(percent) + f" The step already runs as one jitted call "
                 f"({one_call.value}): do not wait for the device inside the loop (float(loss), "
                 "printing device values or block_until_ready() every step), and compute "
                 "metrics or log every few steps rather than every step.", share, one_call)
        return
    if analysis.framework not in (Framework.TENSORFLOW, Framework.UNKNOWN):
        out.give("all_others", text, share)
        return
    if not analysis.tf_functions:
        out.give("all_others", text, share, Evidence("tf.function calls", "none"))
        return
    top = analysis.tf_functions[0]
    calls = f"{top.function}, {top.calls} call{'s' if top.calls != 1 else ''}"
    out.withhold("tf_function", f"the profile shows tf.function calls ({calls}), so the step "
                                "already runs as a tf.function")
    out.give("all_others",
             _all_others_head(percent) + f" The step already runs as a tf.function ({calls}): "
             "keep the Python around it light, and compute metrics or log every few steps "
             "rather than every step.",
             share, Evidence("tf.function calls", calls))


def _all_others_head(percent: float) -> str:
    return (f"{percent:.1f} % of the step time is outside any recorded op ('All others'): "
            "usually Python between steps.")


def _all_others_advice(percent: float, framework: Framework) -> str:
    head = _all_others_head(percent)
    if framework == Framework.JAX:
        return (head + " jit the whole training step (jax.jit), do not wait for the device "
                "inside the loop (float(loss), printing device values or block_until_ready() "
                "every step), and compute metrics or log every few steps rather than every step.")
    if framework == Framework.KERAS:
        return (head + " Run several steps per call with model.compile(steps_per_execution=N), "
                "keep callbacks light, and compute metrics or log every few steps rather than "
                "every step.")
    return (head + " Wrap the step in tf.function, and compute metrics or log every few steps "
            "rather than every step.")


def _device_hints(out: AdviceSet, analysis: HostAnalysis, num_steps: int) -> None:
    device = analysis.ops.device.without_idle()
    nchw = [n for n in device.name if "nchw" in n.lower()]
    if nchw:
        out.give(
            "nhwc_layout",
            f"{len(nchw)} device op(s) run NCHW convolutions (e.g. {nchw[0]}): use the "
            "channels-last layout (NHWC), which Tensor Cores prefer.",
            Evidence("device ops with NCHW in their name", f"{len(nchw)}, e.g. {nchw[0]}"))
    if num_steps and analysis.num_device_kernels:
        kernels_per_step = analysis.num_device_kernels / num_steps
        total_us = float(np.sum(device.total_ps)) / 1e6
        avg_us = total_us / max(int(np.sum(device.occurrences)), 1)
        if kernels_per_step >= MANY_KERNELS_PER_STEP and avg_us < TINY_KERNEL_US:
            fuse = {
                Framework.JAX: "jit a larger part of the program (the whole step; loops with "
                               "jax.lax.scan)",
                Framework.KERAS: "compile the model with jit_compile=True",
            }.get(analysis.framework, "compile the step with tf.function(jit_compile=True)")
            out.give(
                "fuse_kernels",
                f"About {kernels_per_step:.0f} kernels run per step, averaging {avg_us:.1f} us: "
                f"launch overhead dominates. Use a larger batch, or {fuse} so XLA fuses kernels.",
                Evidence("device kernels per step", f"{kernels_per_step:.0f}"),
                Evidence("mean kernel time", f"{avg_us:.1f} us"))
