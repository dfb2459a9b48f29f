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

import re
from typing import TYPE_CHECKING

import numpy as np

from tb_profile_plugin.analysis.advice.input_advice import input_advice
from tb_profile_plugin.analysis.advice.pytorch_advice import no_steps_text, pytorch_advice
from tb_profile_plugin.analysis.advice.verdict_basis import steps_verdict
from tb_profile_plugin.analysis.evidence import AdviceSet, Evidence
from tb_profile_plugin.analysis.hosts.host_analysis import HostAnalysis
from tb_profile_plugin.analysis.ops.jitted_functions import JittedFunction
from tb_profile_plugin.analysis.ops.op_metrics import OpTable
from tb_profile_plugin.analysis.pytorch.facts import is_pytorch
from tb_profile_plugin.analysis.steps.breakdown import category_ps, host_bound_percent
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
#: 16-bit advice only where matrix multiplications and convolutions (what the matrix units run)
#: take at least this share of device compute time.
MATRIX_OP_PERCENT = 10.0
#: A matmul or convolution by its canonical op category (TF op type, HLO category, JAX
#: primitive): MatMul, BatchMatMulV2, FusedMatMul, Conv2D*, DepthwiseConv2dNative, XlaDot,
#: dot_general, conv_general_dilated, "convolution fusion", gemm/einsum; not "convert".
_MATRIX_OP = re.compile(r"matmul|gemm|einsum|xladot|conv(?!ert)|(?<![a-z])dot(?![a-z])")
#: Host dispatch of the step's call at this share of the step time or more is most of the
#: host's work per step: then several steps per call is what helps (`_call_gap`).
DISPATCH_STEP_SHARE = 0.5


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
        if analysis.not_a_loop:
            info.append(f"{prefix}{analysis.not_a_loop}")
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
    if is_pytorch(framework):
        return f"{prefix}no training step could be found. " + no_steps_text()
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
    if is_pytorch(analysis.framework):  # PyTorch's own words (analysis/advice/pytorch_advice.py)
        return pytorch_advice(analysis)
    steps = analysis.steps
    out = AdviceSet()
    total = float(steps.duration_ps.sum())
    jax = analysis.framework == Framework.JAX
    if total <= 0:
        no_steps = Evidence("steps found", "0")
        if analysis.not_a_loop and analysis.jitted:
            _no_loop(out, analysis, no_steps)
            return out
        if analysis.framework == Framework.TENSORFLOW:
            out.give("mark_steps", "Mark training steps so step time can be analysed:\n"
                     + STEP_MARKER_CODE, no_steps)
        else:
            out.give("mark_steps", step_marking(analysis.framework), no_steps)
        return out
    cats = {k: 100.0 * float(v.sum()) / total for k, v in category_ps(steps).items()}
    v = steps_verdict(analysis)
    out.extend(input_advice(v.stated_level, v.input_percent, analysis.framework,
                            analysis.tf_data_names, tf_data))
    if v.bound_by == "transfers":
        _transfer_bound(out, analysis, cats)
    _host_bound(out, analysis, cats)
    one_call = _one_jitted_call_per_step(analysis) if jax else None
    if cats["kernel_launch"] >= KERNEL_LAUNCH_PERCENT:
        launch = Evidence("kernel launch share of step time", f"{cats['kernel_launch']:.1f} %")
        if one_call is not None:
            _withhold_jit(out, one_call)
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
    _precision(out, analysis)
    if cats["all_others"] >= ALL_OTHERS_PERCENT:
        _all_others(out, cats["all_others"], analysis)
    if analysis.has_device:
        _device_hints(out, analysis, len(steps))
    return out


def _step_function(analysis: HostAnalysis) -> JittedFunction | None:
    """The jitted function each step is one call of: where the steps are a jitted function's
    executions (rule "executions"), that function; else the one with the most device time,
    when it ran at most once per step (the steps, the partial ones included) and holds half
    the XLA time or more."""
    if not analysis.jitted:
        return None
    if analysis.root_rule == EXECUTION_RULE:
        return next((r for r in analysis.jitted if r.module == analysis.step_module), None)
    if analysis.num_groups <= 0:
        return None
    top = analysis.jitted[0]
    steps = max(analysis.num_groups, len(analysis.steps))
    if top.calls > steps or top.device_fraction < 0.5:
        return None
    return top


def _one_jitted_call_per_step(analysis: HostAnalysis) -> Evidence | None:
    """Evidence that the step is already one jitted call (`_step_function`), else None."""
    top = _step_function(analysis)
    if top is None:
        return None
    if analysis.root_rule == EXECUTION_RULE:
        return Evidence("jitted calls per step",
                        f"{top.module}, {top.calls} calls in {len(analysis.steps)} steps (the "
                        "steps are its calls)")
    steps = max(analysis.num_groups, len(analysis.steps))
    return Evidence("jitted calls per step", f"{top.module}, {top.calls} calls in {steps} steps")


def _withhold_jit(out: AdviceSet, one_call: Evidence) -> None:
    """"jit the whole step" is never advised where the step is one jitted call already."""
    if not any(w.key == "jit_whole_step" for w in out.withheld):
        out.withhold("jit_whole_step", f"the step already runs as one jitted call "
                                       f"({one_call.value})")


def _call_gap(analysis: HostAnalysis, top: JittedFunction) -> tuple[str, list[Evidence]]:
    """What the time between two calls of the step function is, and what helps there, with
    the figures: mean step time, the function's mean execution time (the device runs it),
    the rest (the device waits for the host's next call) and the host's dispatch of each
    call (`PjitFunction`, where the host shows it; dispatch is asynchronous, so it may overlap
    the previous call's execution). Where dispatch is `DISPATCH_STEP_SHARE` of the step time
    or more, it is most of the host's work per step and several steps per call helps; else
    the host waits in Python or on a result, and keeping the loop from blocking helps."""
    step_ms = float(analysis.steps.duration_ps.mean()) / 1e9
    run_ms = top.mean_ps / 1e9
    gap_ms = max(step_ms - run_ms, 0.0)
    evidence = [Evidence("mean step time", f"{step_ms:.3f} ms"),
                Evidence(f"mean execution time of {top.module}", f"{run_ms:.3f} ms")]
    text = (f"Each step is one call of {top.module}: it runs {run_ms:.3f} ms of the "
            f"{step_ms:.3f} ms step, and for the other {gap_ms:.3f} ms the device waits for "
            "the host's next call")
    dispatch_ms = top.dispatch_mean_ps / 1e9 if top.dispatches else None
    if dispatch_ms is not None:
        evidence.append(Evidence("host dispatch per call", f"{dispatch_ms:.3f} ms"))
        text += (f"; the host spends {dispatch_ms:.3f} ms of each step dispatching the call "
                 "and the rest in Python between calls or waiting for a result")
    else:
        text += " (Python between calls, dispatching the call, or waiting for a result)"
    if dispatch_ms is not None and dispatch_ms >= DISPATCH_STEP_SHARE * step_ms:
        return (text + ". Dispatch is most of the host's step: run several steps per call "
                "(jax.lax.scan over a few batches) or a larger batch, so it is paid once for "
                "more work.", evidence)
    return (text + ". Do not wait for the device inside the loop (float(loss), printing "
            "device values or block_until_ready() every step; log every few steps), so the "
            "host dispatches the next call while the device still runs this one, and prepare "
            "the next batch ahead of the call.", evidence)


def _no_loop(out: AdviceSet, analysis: HostAnalysis, no_steps: Evidence) -> None:
    """No steps because the repeated jitted function's calls are no loop (a benchmark, a
    script): lead with the jitted functions, withhold step advice with why."""
    top = analysis.jitted[0]
    calls = f"{top.calls} call" + ("s" if top.calls != 1 else "")
    out.give("jitted_functions",
             "The profile shows no training loop (the diagnostics say why), so there is no "
             "step time to break down: compare the jitted functions by their time per call "
             f"instead (the jitted functions table). {top.module} has the most device time "
             f"({100 * top.device_fraction:.1f} %, {calls}, {top.mean_ps / 1e9:.3f} ms each). "
             "If the program does have a training loop, "
             + step_marking(analysis.framework)[0].lower() + step_marking(analysis.framework)[1:],
             no_steps, Evidence("jitted functions", str(len(analysis.jitted))),
             Evidence("largest jitted function by device time",
                      f"{top.module}, {100 * top.device_fraction:.1f} %"))
    out.withhold("input", "no steps, so no step time waits for input: the program is not "
                          "called input-bound")


def _matrix_unit(device_type: str) -> str:
    """The matrix units of the device the profile ran on: MXUs (TPU), Matrix Cores (AMD),
    Tensor Cores (NVIDIA and other GPUs)."""
    if device_type.startswith("TPU"):
        return "MXUs"
    if device_type.startswith("AMD"):
        return "Matrix Cores"
    return "Tensor Cores"


def _matrix_ps(table: OpTable) -> int:
    """Device time of matmuls and convolutions, by the canonical op category column."""
    ops = table.without_idle()
    matrix = [bool(_MATRIX_OP.search(c.lower())) for c in ops.category]
    return int(np.sum(np.asarray(ops.total_ps)[np.array(matrix, bool)])) if matrix else 0


def _precision(out: AdviceSet, analysis: HostAnalysis) -> None:
    """16-bit compute advice: only where little device compute is 16-bit and matmuls or
    convolutions (which the device's matrix units run) take `MATRIX_OP_PERCENT` or more of
    it; the units named by device (Tensor Cores, Matrix Cores, MXUs)."""
    precision_total = analysis.ops.compute_16bit_ps + analysis.ops.compute_32bit_ps
    if not analysis.has_device or precision_total <= 0:
        return
    share16 = 100.0 * analysis.ops.compute_16bit_ps / precision_total
    if share16 >= LOW_16BIT_PERCENT:
        return
    device = analysis.environment.device_type
    unit = _matrix_unit(device)
    matrix = min(100.0, 100.0 * _matrix_ps(analysis.ops.device_tf_ops) / precision_total)
    if matrix < MATRIX_OP_PERCENT:
        out.withhold("mixed_precision",
                     f"only {share16:.1f} % of device compute time is 16-bit, but matrix "
                     f"multiplications and convolutions take {matrix:.1f} % of it (under "
                     f"{MATRIX_OP_PERCENT:g} %), so 16-bit compute would gain little from the "
                     f"{device}'s {unit}")
        return
    evidence = (Evidence("16-bit share of device compute time", f"{share16:.1f} %"),
                Evidence("matmul and convolution share of device compute time",
                         f"{matrix:.1f} %"),
                Evidence("device", device))
    if analysis.framework == Framework.JAX:
        out.give("mixed_precision",
                 f"Only {share16:.1f} % of device compute time is 16-bit, and matrix "
                 f"multiplications and convolutions take {matrix:.1f} % of it: compute in "
                 "bfloat16 (cast parameters and inputs with .astype(jnp.bfloat16), or "
                 "dtype=jnp.bfloat16 in Flax modules) so that they run on the "
                 f"{device}'s {unit} at their 16-bit rate.", *evidence)
        return
    out.give("mixed_precision",
             f"Only {share16:.1f} % of device compute time is 16-bit, and matrix "
             f"multiplications and convolutions take {matrix:.1f} % of it: enable mixed "
             "precision (tf.keras.mixed_precision.set_global_policy('mixed_float16')) to use "
             f"the {device}'s {unit}.", *evidence)


def _transfer_bound(out: AdviceSet, analysis: HostAnalysis, cats: dict[str, float]) -> None:
    """The step waits on copies between memories (breakdown.py `transfer_bound_percent`: the
    verdict says "bounded by transfers"): what is copied, and what helps, by device."""
    device = analysis.environment.device_type
    evidence = (Evidence("device-to-device share of step time (copies and waits for them)",
                         f"{cats['device_to_device']:.1f} %"),
                Evidence("device compute share of step time", f"{cats['device_compute']:.1f} %"),
                Evidence("device", device))
    head = (f"{cats['device_to_device']:.1f} % of the step time is copies between memories and "
            f"the device waiting for them, against {cats['device_compute']:.1f} % compute: "
            "the step is bounded by transfers, not by the computation.")
    if device.startswith("TPU"):
        out.give("transfers",
                 head + " On a TPU these are usually arrays offloaded to host memory (host "
                 "memory shardings, offloading checkpoint/remat policies) that come back every "
                 "step, or async copies that do not overlap compute: keep the arrays every step "
                 "uses in HBM, offload less, or start the copies earlier so that they overlap "
                 "the computation.", *evidence)
        return
    out.give("transfers",
             head + " On a GPU these are device-to-device memcpys: keep arrays on the device "
             "that uses them, and let collectives move data between devices rather than "
             "explicit copies.", *evidence)


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
    step_function = _step_function(analysis) if one_call is not None else None
    if one_call is not None and step_function is not None:
        _withhold_jit(out, one_call)
        gap, figures = _call_gap(analysis, step_function)
        out.give("all_others", _all_others_head(percent) + " " + gap, share, one_call,
                 *figures)
        return
    if analysis.framework not in (Framework.TENSORFLOW, Framework.UNKNOWN):
        out.give("all_others", text, share)
        return
    if not analysis.tf_functions and analysis.graph_execution:
        graph = "; ".join(f"{what}: {count}" for what, count in analysis.graph_execution)
        out.withhold("tf_function", f"the profile shows the step's ops running as a graph "
                                    f"({graph}), so the step already runs as a graph function")
        out.give("all_others",
                 _all_others_head(percent) + f" The step's ops already run as a graph "
                 f"({graph}): keep the Python around it light, and compute metrics or log "
                 "every few steps rather than every step.",
                 share, Evidence("graph execution", graph))
        return
    if not analysis.tf_functions:
        out.give("all_others", text, share, Evidence("tf.function calls", "none"),
                 Evidence("graph execution", "none"))
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
            f"channels-last layout (NHWC), which {_matrix_unit(analysis.environment.device_type)}"
            " prefer.",
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
