"""Advice that fits the program (issue 28): graph execution in any TF version withholds "wrap
the step in tf.function"; a step that already is one jitted call is never told to jit it and
hears what the gap between calls is; repeated jitted calls that are no loop give no steps
(and no input-bound verdict), the jitted functions table leading; 16-bit advice only where
matmuls or convolutions take device time, naming the device's matrix units.

Synthetic spaces copy the producers' layouts (docs/producers.md): TF 2.4 on GPU grouped by the
producer (tests/xspace_builder.py `tf24_grouped_gpu_space`), JAX on GPU (`PjitFunction(f)` and
`jit_f:XLA GPU module` on the python thread, the launches on the tracer's thread line, kernels
with `hlo_module`/`hlo_op`/`name`, the jax_nvidia_plain layout), XLA on TPU (XLA Modules and
XLA Ops lines, metadata `hlo_category`).
"""

from __future__ import annotations

from typing import Any

from tb_profile_plugin.analysis.hosts.host_analysis import analyze
from tb_profile_plugin.analysis.steps.step_db import EventType
from tb_profile_plugin.tools import registry
from tb_profile_plugin.xspace.decode import decode_xspace
from tests.fixtures import DATA_DIR, build_view
from tests.xspace_builder import Uint, XSpaceBuilder, tf24_grouped_gpu_space

US = 1_000_000  # ps


def _overview(data: bytes) -> dict[str, Any]:
    request = registry.ViewRequest("run", "h", {"h": decode_xspace(data)}, {})
    return registry.VIEWS["overview_page"].build(request)


def _advice(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {a["key"]: a for a in doc["advice"]}


def _withheld(doc: dict[str, Any]) -> dict[str, str]:
    return {w["key"]: w["reason"] for w in doc["advice_withheld"]}


# --- 1. TF 2.4: the step already runs as a graph ----------------------------------------------


def test_tf24_graph_step_is_not_told_to_wrap_it_in_tf_function() -> None:
    """TF 2.4 writes no `EagerLocalExecute: __inference_*` call events, but its ops run under
    the executor (`ExecutorState::Process` on tf_Compute, a `FunctionRun` per step, `level 0`
    kernels grouped by the producer): no tf.function advice, and why."""
    doc = _overview(tf24_grouped_gpu_space(steps=8))
    assert doc["run_environment"]["framework"] == "TensorFlow"
    assert doc["tf_functions"] == []
    others = _advice(doc)["all_others"]
    assert "Wrap the step in tf.function" not in others["text"]
    graph = ("graph executor runs (ExecutorState::Process): 8; graph function runs "
             "(FunctionRun): 8; TensorFlow ops in the producer's graph steps (TF <= 2.4 "
             "'level 0' ops under a group): 16")
    assert others["text"].endswith(
        f"The step's ops already run as a graph ({graph}): keep the Python around it light, "
        "and compute metrics or log every few steps rather than every step.")
    assert {"what": "graph execution", "value": graph} in others["evidence"]
    assert _withheld(doc)["tf_function"] == (
        f"the profile shows the step's ops running as a graph ({graph}), so the step already "
        "runs as a graph function")


def test_eager_tensorflow_without_graph_is_still_told_to_use_tf_function() -> None:
    """Ops run eagerly (no executor, no function run, no grouped `level 0` op): the advice
    stands, and its evidence says both checks found nothing."""
    b = XSpaceBuilder()
    py = b.plane("/host:CPU").line("python", line_id=1)
    for k in range(8):
        t0 = k * 1000 * US
        py.event("train", t0, 900 * US, step_num=k, _r=1)
        py.event("EagerKernelExecute", t0 + 10 * US, 200 * US)
        py.event("dense/MatMul:MatMul", t0 + 20 * US, 180 * US)
    doc = _overview(b.serialize())
    others = _advice(doc)["all_others"]
    assert "Wrap the step in tf.function" in others["text"]
    assert others["evidence"][1:] == [{"what": "tf.function calls", "value": "none"},
                                      {"what": "graph execution", "value": "none"}]


# --- 2. JAX: a step that is one jitted call -------------------------------------------------


def test_one_jitted_call_per_step_is_never_told_to_jit_it_and_hears_the_gap() -> None:
    """jax_gpu_attention (MI355X): each of the 5 steps is one call of jit_loss_fn; the 'All
    others' advice says what the gap between calls is, with the figures."""
    doc = build_view("overview_page", next((DATA_DIR / "jax_gpu_attention").glob(
        "**/*.xplane.pb")))
    assert doc["step_rule"] == "executions" and len(doc["steps"]) == 5
    for item in doc["advice"]:
        assert "jit the whole" not in item["text"]
    assert _withheld(doc)["jit_whole_step"] == (
        "the step already runs as one jitted call (jit_loss_fn, 5 calls in 5 steps (the steps "
        "are its calls))")
    others = _advice(doc)["all_others"]
    assert ("Each step is one call of jit_loss_fn: it runs 2.476 ms of the 2.591 ms step, and "
            "for the other 0.115 ms the device waits for the host's next call; the host spends "
            "1.029 ms of each step dispatching the call") in others["text"]
    assert [e["what"] for e in others["evidence"]] == [
        "'All others' share of step time", "jitted calls per step", "mean step time",
        "mean execution time of jit_loss_fn", "host dispatch per call"]


# --- 3. repeated jitted calls that are no loop ----------------------------------------------


def _jax_gpu(calls: list[tuple[str, int, int]]) -> bytes:
    """JAX on one NVIDIA GPU, one call per (module, start µs, kernel µs): `PjitFunction(f)` and
    `jit_f:XLA GPU module` [t, t+20] on the python thread, the launch at t+5 on the tracer's
    thread line, the kernel [t+30, t+30+kernel] on stream 7."""
    b = XSpaceBuilder(hostnames=["gpu-host"])
    b.plane("/host:metadata").plane_stat("jax_version", "0.8.0")
    host = b.plane("/host:CPU")
    python = host.line("python", line_id=1)
    api = host.line("Host Threads/9", line_id=9)
    gpu = b.gpu_plane(0)
    gpu.plane_stat("gpu_model", "NVIDIA H200")
    stream = gpu.line("Stream #7(Compute)", line_id=7)
    for corr, (module, start_us, kernel_us) in enumerate(calls, start=1):
        t0 = start_us * US
        fn = module.removeprefix("jit_")
        python.event(f"PjitFunction({fn})", t0, 20 * US)
        python.event(f"{module}:XLA GPU module", t0, 20 * US)
        api.event("cuLaunchKernel", t0 + 5 * US, 1 * US, correlation_id=Uint(corr))
        stream.kernel("loop_fusion", t0 + 30 * US, kernel_us * US, corr, hlo_module=module,
                      hlo_op="loop_fusion", name=f"jit({fn})/add")
    return b.serialize()


def _micro_benchmark() -> bytes:
    """24 calls of jit_matmul in three bursts of 8 (100 µs apart, 50 µs kernels); between the
    bursts, eight other jitted functions once each (2 ms apart, 1.5 ms kernels)."""
    calls, t = [], 0
    others = [f"jit_op{k}" for k in range(8)]
    for burst in range(3):
        for _ in range(8):
            calls.append(("jit_matmul", t, 50))
            t += 100
        for module in others[3 * burst: 3 * burst + 3]:
            calls.append((module, t, 1500))
            t += 2000
    return _jax_gpu(calls)


def test_repeated_calls_that_are_no_loop_give_no_steps_and_lead_with_the_functions() -> None:
    doc = _overview(_micro_benchmark())
    assert doc["steps"] == [] and doc["step_rule"] == "none"
    assert doc["bottleneck"]["input_bound"] == "unknown"
    assert [row["module"] for row in doc["jitted_functions"]][0] == "jit_op0"
    assert len(doc["jitted_functions"]) == 9
    matmul = next(r for r in doc["jitted_functions"] if r["module"] == "jit_matmul")
    assert matmul["calls"] == 24
    why = ("jit_matmul ran 24 times, but not like a training loop: its calls come at no steady "
           "period (0.100-6.100 ms apart, spread 2.8x their mean; a loop's is at most 1x) and "
           "it holds only 12 % of the device time of the jitted calls around it (a loop's step "
           "function holds 50 % or more), so its calls were not taken as steps; see the jitted "
           "functions table for the time per function.")
    assert why in doc["diagnostics"]["info"]
    assert [a["key"] for a in doc["advice"]] == ["jitted_functions"]
    lead = doc["advice"][0]["text"]
    assert lead.startswith(
        "The profile shows no training loop (the diagnostics say why), so there is no step "
        "time to break down: compare the jitted functions by their time per call instead (the "
        "jitted functions table). jit_op0 has the most device time (11.4 %, 1 call, 1.500 ms "
        "each).")
    assert "jax.profiler.StepTraceAnnotation" in lead
    assert _withheld(doc)["input"] == ("no steps, so no step time waits for input: the program "
                                       "is not called input-bound")


def test_a_loop_keeps_its_steps_and_other_jitted_calls_are_its_device_compute() -> None:
    """Six iterations 1 ms apart, each jit_train_step (300 µs) then jit_metrics (100 µs):
    a loop (period CV 0, the step function 75 % of the time); jit_metrics is device compute
    of the step it runs in, never 'All others'; no input pipeline: not input-bound."""
    calls = []
    for k in range(6):
        calls += [("jit_train_step", 1000 * k, 300), ("jit_metrics", 1000 * k + 350, 100)]
    analysis = analyze(decode_xspace(_jax_gpu(calls)))
    assert analysis.root_rule == "executions" and analysis.step_module == "jit_train_step"
    assert analysis.not_a_loop == ""
    steps = analysis.steps
    assert len(steps) == 6
    assert steps.type_ps[:5, EventType.DEVICE_COMPUTE_32].tolist() == [400 * US] * 5
    assert steps.type_ps[:5, EventType.UNKNOWN_TIME].tolist() == [600 * US] * 5
    doc = _overview(_jax_gpu(calls))
    assert doc["bottleneck"]["input_bound"] == "not"
    assert doc["bottleneck"]["statement"].startswith(
        "The program is NOT input-bound: the profile shows no input pipeline")


# --- 4. 16-bit advice names the matrix units, only where matmuls/convolutions run ----------


def _tpu(category: str) -> bytes:
    """JAX on a TPU v6 Lite: jit_f four times, 300 µs apart, each one 200 µs op of
    `category`."""
    b = XSpaceBuilder(hostnames=["tpu-host"])
    b.plane("/host:metadata").plane_stat("jax_version", "0.8.0")
    tpu = b.plane("/device:TPU:0", plane_id=1)
    tpu.plane_stat("device_type_string", "TPU v6 Lite")
    modules = tpu.line("XLA Modules", line_id=2)
    ops = tpu.line("XLA Ops", line_id=3)
    op = "%fusion.3 = f32[8,8]{1,0} fusion(%p0), kind=kOutput"
    tpu.metadata_stats(op, display_name="fusion.3", hlo_category=category,
                       tf_op="jit(f)/op", program_id="7")
    for k in range(4):
        t0 = (100 + 300 * k) * US
        modules.event("jit_f(1219)", t0, 250 * US, run_id=10 + k)
        ops.event(op, t0, 200 * US, display_name="fusion.3", device_duration_ps=200 * US)
    return b.serialize()


def test_tpu_without_matmul_or_convolution_is_not_told_to_use_bfloat16() -> None:
    doc = _overview(_tpu("loop fusion"))
    assert doc["run_environment"]["device_type"] == "TPU v6 Lite"
    assert doc["device_compute_precision"]["percent_16bit"] == 0.0
    assert "mixed_precision" not in _advice(doc)
    assert _withheld(doc)["mixed_precision"] == (
        "only 0.0 % of device compute time is 16-bit, but matrix multiplications and "
        "convolutions take 0.0 % of it (under 10 %), so 16-bit compute would gain little from "
        "the TPU v6 Lite's MXUs")
    for item in doc["advice"]:
        assert "Tensor Core" not in item["text"]


def test_tpu_convolutions_are_told_bfloat16_for_the_mxus() -> None:
    doc = _overview(_tpu("convolution fusion"))
    advice = _advice(doc)["mixed_precision"]
    assert advice["text"].endswith("so that they run on the TPU v6 Lite's MXUs at their "
                                   "16-bit rate.")
    assert "Tensor Core" not in advice["text"]
    assert {"what": "matmul and convolution share of device compute time",
            "value": "100.0 %"} in advice["evidence"]
    assert {"what": "device", "value": "TPU v6 Lite"} in advice["evidence"]


def test_amd_gpus_are_told_matrix_cores_and_nvidia_tensor_cores() -> None:
    calls = [("jit_train_step", 1000 * k, 300) for k in range(4)]
    nvidia = _overview(_jax_gpu(calls))
    # loop_fusion kernels of "jit(train_step)/add": no matmul, no convolution
    assert "mixed_precision" in _withheld(nvidia)
    assert _withheld(nvidia)["mixed_precision"].endswith("the NVIDIA H200's Tensor Cores")
    doc = build_view("overview_page", next((DATA_DIR / "jax_nvidia_plain").glob(
        "**/*.xplane.pb")))
    text = _advice(doc)["mixed_precision"]["text"]
    assert "NVIDIA H200's Tensor Cores" in text
    assert "matrix multiplications and convolutions take 84.9 % of it" in text
