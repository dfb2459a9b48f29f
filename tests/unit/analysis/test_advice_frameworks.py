"""Advice in the program's framework's words (analysis/advice/recommendations.py): a JAX
program is told to mark steps with jax.profiler.StepTraceAnnotation and to prefetch to the
device, never to use tf.function or tf.profiler; TensorFlow programs get the advice they
always got; Keras programs are told what to check; the overview's run environment names the
framework."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tb_profile_plugin.analysis.advice.recommendations import recommendations, step_diagnostics
from tb_profile_plugin.analysis.hosts.host_analysis import HostAnalysis, analyze
from tb_profile_plugin.analysis.hosts.multi_host import combined_framework
from tb_profile_plugin.analysis.steps.step_db import NUM_TYPES, StepDb
from tb_profile_plugin.cli import main
from tb_profile_plugin.tools import registry
from tb_profile_plugin.xspace.decode import decode_xspace
from tb_profile_plugin.xspace.producers import Framework
from tests.fixtures import DATA_DIR, build_view
from tests.unit.analysis.test_gpu_step_breakdown import gpu_profile
from tests.xspace_builder import XSpaceBuilder

US = 1_000_000  # ps
#: What TensorFlow-only advice looks like; none of it may reach a JAX program without tf.data.
TF_WORDS = ("tf.function", "tf.profiler", "tf.data", "tf.keras", "TF_GPU_THREAD_MODE")


def _capture(name: str) -> Path:
    return next((DATA_DIR / name).glob("**/*.xplane.pb"))


def _analysis(data: bytes) -> HostAnalysis:
    return analyze(decode_xspace(data))


def _overview(data: bytes) -> dict[str, Any]:
    request = registry.ViewRequest("run", "h", {"h": decode_xspace(data)}, {})
    return registry.VIEWS["overview_page"].build(request)


def _jax_cpu_without_steps() -> bytes:
    """A JAX CPU capture of one call: no StepTraceAnnotation, no function executed twice."""
    b = XSpaceBuilder()
    meta = b.plane("/host:metadata")
    meta.plane_stat("jax_version", "0.10.2")
    cpu = b.plane("/host:CPU")
    cpu.line("python", line_id=1).event("PjitFunction(train_step)", 0, 50 * US)
    cpu.line("tf_XLAEigen/1", line_id=2).event("dot.3", 10 * US, 20 * US, hlo_op="dot.3",
                                               hlo_module="jit_train_step", run_id=1)
    return b.serialize()


def _tf_without_steps() -> bytes:
    b = XSpaceBuilder()
    py = b.plane("/host:CPU").line("python", line_id=1)
    for i in range(3):
        py.event("dense/MatMul:MatMul", i * 100 * US, 10 * US)
        py.event("Iterator::Root::Map", i * 100 * US + 20 * US, 10 * US)
    return b.serialize()


def _no_steps(analysis: HostAnalysis) -> HostAnalysis:
    """The analysis as if no step had been captured."""
    none = np.zeros(0, np.int64)
    empty = StepDb(none, none, none, none, np.zeros((0, NUM_TYPES), np.int64), False, 0, 0)
    return replace(analysis, steps=empty, root_rule="none", num_groups=0)


# --- JAX ---------------------------------------------------------------------------------


def test_jax_without_steps_is_told_step_trace_annotation_and_no_tensorflow() -> None:
    doc = _overview(_jax_cpu_without_steps())
    assert doc["steps"] == [] and doc["step_rule"] == "none"
    assert doc["run_environment"]["framework"] == "JAX"
    [warning] = doc["diagnostics"]["warnings"]
    assert warning.startswith("no training step could be found in this JAX program (detected "
                              "from the /host:metadata plane's jax_version 0.10.2)")
    [advice] = doc["recommendations"]
    for text in (warning, advice):
        prose, code = text.split("\n", 1)
        assert "jax.profiler.StepTraceAnnotation" in prose
        assert code == ("for step, batch in enumerate(batches):\n"
                        "    with jax.profiler.StepTraceAnnotation('train', step_num=step):\n"
                        "        state = train_step(state, batch)")
        assert not any(word in text for word in TF_WORDS), text


def test_jax_remedies_on_tensorflow_numbers() -> None:
    """The synthetic GPU profile's numbers (input 10 %, kernel launch 16 %, all others 25 %)
    read as a JAX program's: JAX's remedies, none of TensorFlow's."""
    tf = _analysis(gpu_profile())
    jax = replace(tf, framework=Framework.JAX, framework_evidence="test")
    advice = recommendations(jax)
    assert len(advice) == len(recommendations(tf)) == 3
    input_advice, launch, others = advice
    assert input_advice.startswith("Input takes 10.0 % of the step time: the device waits")
    assert "jax.device_put" in input_advice and "prefetch_to_device" in input_advice
    assert launch.startswith("Kernel launch takes 16.0 % of the step time: jit the whole")
    assert others.startswith("25.0 % of the step time is outside any recorded op")
    assert "jax.jit" in others
    for text in advice:
        assert not any(word in text for word in TF_WORDS), text
    precision = recommendations(replace(jax, ops=replace(jax.ops, compute_16bit_ps=0)))
    assert any("jnp.bfloat16" in text for text in precision)
    assert not any("mixed_float16" in text for text in precision)


def test_jax_with_tf_data_gets_tf_data_advice_but_never_tf_function() -> None:
    """An input-bound JAX program whose profile shows a tf.data pipeline."""
    slow = analyze(decode_xspace(_capture("tfdata_slow").read_bytes()))
    assert slow.has_tf_data
    jax = replace(slow, framework=Framework.JAX, framework_evidence="test")
    device, prefetch, parallel_map, pointer = recommendations(jax)[:4]
    assert device.startswith("Input takes 64.3 % of the step time: the device waits")
    assert "prefetch_to_device" in device and "tf.data" not in device
    # tf.data's fixes, each because the pipeline shows it needs it (it ends in BatchV2 and
    # maps one element at a time)
    assert prefetch.startswith("Input takes 64.3 % of the step time and the tf.data pipeline "
                               "ends in Iterator::Root::BatchV2, not in a prefetch: add "
                               ".prefetch(tf.data.AUTOTUNE)")
    assert "Iterator::Root::BatchV2::Map runs one element at a time" in parallel_map
    assert "tf.data bottleneck analysis" in pointer
    without = recommendations(replace(jax, has_tf_data=False, tf_data_names=()))
    assert [text for text in without if "tf.data" in text] == []
    assert not any("tf.function" in text for text in recommendations(jax))


def test_steps_from_executions_name_the_jax_marker() -> None:
    analysis = analyze(decode_xspace(_capture("jax_cpu_plain").read_bytes()))
    assert analysis.root_rule == "executions" and analysis.framework == Framework.JAX
    warnings, info = step_diagnostics("", analysis)
    assert warnings == []
    assert ("to set the step boundaries yourself, mark each training step: with "
            "jax.profiler.StepTraceAnnotation('train', step_num=step): around it.") in info
    assert not any(word in text for text in info + recommendations(analysis)
                   for word in TF_WORDS)


@pytest.mark.parametrize("name", ["jax_cpu_steps", "jax_cpu_plain", "jax_gpu_conv",
                                  "jax_gpu_attention"])
def test_real_jax_captures_get_no_tensorflow_advice(name: str) -> None:
    doc = build_view("overview_page", _capture(name))
    assert doc["run_environment"]["framework"] == "JAX"
    texts = doc["recommendations"] + doc["diagnostics"]["warnings"] + doc["diagnostics"]["info"]
    assert not any(word in text for text in texts for word in TF_WORDS)


# --- TensorFlow: the advice it always had ----------------------------------------------------

TF_MARKER = ("for step, batch in enumerate(dataset):\n"
             "    with tf.profiler.experimental.Trace('train', step_num=step, _r=1):\n"
             "        train_step(batch)")


def test_tensorflow_advice_rests_on_the_profile() -> None:
    """The synthetic GPU profile waits 10 % for input (IteratorGetNext and a host-to-device
    copy) but records no tf.data iterator: no tf.data fix is advised (issue 18: the pipeline
    may already have it), only how to record the pipeline; the rest is TensorFlow's advice.
    Its ops run under the graph executor (`ExecutorState::Process`), so it is not told to wrap
    the step in tf.function (issue 28: that advice was wrong for a step already running as a
    graph); the precision advice names the device's Tensor Cores and its matmul share."""
    doc = _overview(gpu_profile())
    assert doc["run_environment"]["framework"] == "TensorFlow"
    assert doc["recommendations"] == [
        "Input takes 10.0 % of the step time, but no tf.data iterator events (Iterator::*) were "
        "recorded, so what the input pipeline does cannot be checked. If it is a tf.data "
        "pipeline, capture with host_tracer_level=2 (the default) to record its iterators; the "
        "tf.data bottleneck analysis then names its slowest stage.",
        "Kernel launch takes 16.0 % of the step time: set TF_GPU_THREAD_MODE=gpu_private so "
        "kernels are launched from dedicated threads.",
        "25.0 % of the step time is outside any recorded op ('All others'): usually Python "
        "between steps. The step's ops already run as a graph (graph executor runs "
        "(ExecutorState::Process): 2): keep the Python around it light, and compute metrics or "
        "log every few steps rather than every step.",
    ]
    assert [a["text"] for a in doc["advice"]] == doc["recommendations"]
    assert [(a["key"], a["evidence"]) for a in doc["advice"]] == [
        ("tf_data_trace", [{"what": "input share of step time", "value": "10.0 %"},
                           {"what": "tf.data iterator events", "value": "none"}]),
        ("kernel_launch", [{"what": "kernel launch share of step time", "value": "16.0 %"}]),
        ("all_others", [{"what": "'All others' share of step time", "value": "25.0 %"},
                        {"what": "graph execution",
                         "value": "graph executor runs (ExecutorState::Process): 2"}]),
    ]
    assert [w["key"] for w in doc["advice_withheld"]] == [
        "tf_data_prefetch", "tf_data_parallel_map", "tf_data_parallel_reads", "tf_function"]
    tf = _analysis(gpu_profile())
    precision = recommendations(replace(tf, ops=replace(tf.ops, compute_16bit_ps=0)))
    assert ("Only 0.0 % of device compute time is 16-bit, and matrix multiplications and "
            "convolutions take 100.0 % of it: enable mixed precision "
            "(tf.keras.mixed_precision.set_global_policy('mixed_float16')) to use the NVIDIA "
            "H100's Tensor Cores.") in precision


def test_tensorflow_without_steps_is_unchanged() -> None:
    doc = _overview(_tf_without_steps())
    assert doc["run_environment"]["framework"] == "TensorFlow"
    assert doc["diagnostics"]["warnings"] == [
        "no training step could be found. Looked for events with _r=1 "
        "(tf.profiler.experimental.Trace('train', step_num=N, _r=1)), "
        "TraceContext/SessionRun/RunGraph, TensorFlow loop iterations, and Keras 3 step "
        "functions (__inference_*step_on_iterator*); Mark each step in your training loop:\n"
        + TF_MARKER]
    assert doc["recommendations"] == [
        "Mark training steps so step time can be analysed:\n" + TF_MARKER]


def test_unknown_framework_is_shown_both_markers() -> None:
    b = XSpaceBuilder()
    b.plane("/host:CPU").line("python", line_id=1).event("load_batch", 0, 10 * US)
    doc = _overview(b.serialize())
    assert doc["run_environment"]["framework"] == "unknown"
    [warning] = doc["diagnostics"]["warnings"]
    code = warning.split("\n", 1)[1]
    assert code == ("# TensorFlow\n" + TF_MARKER + "\n# JAX\n"
                    "for step, batch in enumerate(batches):\n"
                    "    with jax.profiler.StepTraceAnnotation('train', step_num=step):\n"
                    "        state = train_step(state, batch)")


# --- Keras ---------------------------------------------------------------------------------


def test_keras_fit() -> None:
    keras = analyze(decode_xspace(_capture("keras_fit").read_bytes()))
    assert keras.framework == Framework.KERAS
    others = [t for t in recommendations(keras) if "'All others'" in t]
    assert others and "steps_per_execution" in others[0] and "tf.function" not in others[0]
    warnings, _ = step_diagnostics("", _no_steps(keras))
    [warning] = warnings
    assert warning.startswith("no training step could be found in this Keras program "
                              "(detected from Keras step function events (*step_on_iterator*))")
    prose, code = warning.split("\n", 1)
    assert "model.fit marks each step itself" in prose and "run_eagerly" in prose
    assert code.startswith("class ProfileSteps(keras.callbacks.Callback):")


# --- several hosts --------------------------------------------------------------------------


def test_hosts_vote_and_unknown_hosts_abstain() -> None:
    tf = _analysis(gpu_profile())
    unknown = replace(tf, framework=Framework.UNKNOWN, framework_evidence="")
    jax = replace(tf, framework=Framework.JAX, framework_evidence="JAX's dispatch events")
    assert combined_framework({"a": unknown, "b": tf}) == (
        Framework.TENSORFLOW, "b: TensorFlow runtime events (ExecutorState::Process)")
    assert combined_framework({"a": tf, "b": jax, "c": jax}) == (
        Framework.JAX, "b: JAX's dispatch events")
    assert combined_framework({"a": unknown}) == (Framework.UNKNOWN, "")
    assert combined_framework({"a": tf}) == (
        Framework.TENSORFLOW, "TensorFlow runtime events (ExecutorState::Process)")


def test_all_hosts_overview_names_the_framework() -> None:
    paths = sorted((DATA_DIR / "two_hosts").glob("**/*.xplane.pb"))
    profiles = {p.name.removesuffix(".xplane.pb"): decode_xspace(p.read_bytes()) for p in paths}
    doc = registry.VIEWS["overview_page"].build(registry.ViewRequest("run", "ALL_HOSTS",
                                                                     profiles, {}))
    assert doc["run_environment"]["framework"] == "TensorFlow"
    assert doc["run_environment"]["framework_evidence"] == (
        "127.0.0.1_60401: TensorFlow runtime events (ExecutorState::Process)")


def test_cli_summary_names_the_framework(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["summary", str(DATA_DIR / "jax_gpu_conv")]) == 0
    device_line = next(line for line in capsys.readouterr().out.splitlines()
                       if line.strip().startswith("Device:"))
    assert device_line.strip() == "Device: AMD GPU - gfx942 x 8   Framework: JAX"
