"""Which framework wrote a profile (xspace/producers/ `detect_framework`): real captures of
every framework we have, and synthetic XSpaces in each producer's layout."""

from __future__ import annotations

import pytest

from tb_profile_plugin.xspace.decode import decode_xspace
from tb_profile_plugin.xspace.producers import Framework, FrameworkGuess, detect_framework
from tests.fixtures import DATA_DIR
from tests.xspace_builder import Ref, XSpaceBuilder, tf24_gpu_space, tf24_grouped_gpu_space

US = 1_000_000  # ps

REAL_CAPTURES = {
    "jax_cpu_steps": Framework.JAX,
    "jax_cpu_plain": Framework.JAX,
    "jax_gpu_conv": Framework.JAX,
    "jax_gpu_attention": Framework.JAX,
    "keras_fit": Framework.KERAS,
    "custom_loop": Framework.TENSORFLOW,
    "tfdata_slow": Framework.TENSORFLOW,
    "tfdata_parallel": Framework.TENSORFLOW,
    "two_hosts": Framework.TENSORFLOW,
}


def _detect(data: bytes) -> FrameworkGuess:
    return detect_framework(decode_xspace(data))


@pytest.mark.parametrize("name", sorted(REAL_CAPTURES))
def test_real_captures(name: str) -> None:
    paths = sorted((DATA_DIR / name).glob("**/*.xplane.pb"))
    assert paths
    for path in paths:
        guess = detect_framework(decode_xspace(path.read_bytes()))
        assert guess.framework == REAL_CAPTURES[name], path
        assert guess.evidence


def test_real_evidence_names_what_decided() -> None:
    def evidence(name: str) -> str:
        path = next((DATA_DIR / name).glob("**/*.xplane.pb"))
        return detect_framework(decode_xspace(path.read_bytes())).evidence

    # JAX 0.10 on CPU writes its version; JAX 0.8 on ROCm does not, its dispatch events tell.
    assert evidence("jax_cpu_steps") == "the /host:metadata plane's jax_version 0.10.2"
    assert evidence("jax_gpu_conv") == "JAX's dispatch events (PjitFunction(…))"
    assert evidence("keras_fit") == "Keras step function events (*step_on_iterator*)"
    assert evidence("custom_loop") == "TensorFlow runtime events (ExecutorState::Process)"


# --- synthetic layouts ---------------------------------------------------------------------


def _jax_cpu(version: bool = True) -> XSpaceBuilder:
    """JAX on CPU: metadata plane with the versions; PjitFunction on the python thread, XLA's
    CPU thunks (hlo_op, hlo_module) on an Eigen thread."""
    b = XSpaceBuilder()
    meta = b.plane("/host:metadata")
    if version:
        meta.plane_stat("jax_version", "0.10.2")
        meta.plane_stat("jaxlib_version", "0.10.2")
    cpu = b.plane("/host:CPU")
    cpu.line("python", line_id=1).event("PjitFunction(train_step)", 0, 50 * US)
    cpu.line("tf_XLAEigen/1", line_id=2).event("dot.3", 10 * US, 20 * US, hlo_op="dot.3",
                                               hlo_module="jit_train_step")
    return b


def test_jax_version_on_the_metadata_plane() -> None:
    guess = _detect(_jax_cpu().serialize())
    assert guess == FrameworkGuess(Framework.JAX,
                                   "the /host:metadata plane's jax_version 0.10.2")


def test_jax_dispatch_without_version() -> None:
    guess = _detect(_jax_cpu(version=False).serialize())
    assert guess == FrameworkGuess(Framework.JAX, "JAX's dispatch events (PjitFunction(…))")


def test_jax_gpu_kernels_alone() -> None:
    """A device-only JAX GPU capture: kernels with `tf_op` "XlaModule:" (a ref, as JAX's GPU
    runtime writes it), the JAX op path in `name`, HLO op and module."""
    b = XSpaceBuilder()
    stream = b.gpu_plane(0).line("Stream #1(Kernel)", line_id=1)
    stream.kernel("loop_convert_fusion", 0, 5 * US, 1, tf_op=Ref("XlaModule:"),
                  name=Ref("jit(matmul)/convert_element_type"), hlo_op=Ref("loop_convert_fusion"),
                  hlo_module=Ref("jit_matmul"))
    assert _detect(b.serialize()) == FrameworkGuess(Framework.JAX,
                                                    "kernels with JAX's tf_op 'XlaModule:'")


def test_jax_on_tpu_by_its_module_names() -> None:
    """TPU layout: "XLA Modules" events named `jit_f(<fingerprint>)`, "XLA Ops" with the HLO
    text as the name; no host plane."""
    b = XSpaceBuilder()
    tpu = b.plane("/device:TPU:0", plane_id=1)
    tpu.plane_stat("device_type_string", "TPU v6 Lite")
    tpu.line("XLA Modules", line_id=2).event("jit_f(12193488)", 0, 100 * US, run_id=1)
    ops = tpu.line("XLA Ops", line_id=3)
    ops.event("%fusion.1 = f32[8]{0} fusion(%p0)", 0, 50 * US, display_name="fusion.1")
    tpu.metadata_stats("%fusion.1 = f32[8]{0} fusion(%p0)", "fusion.1",
                       tf_op="jit(f)/dot_general", hlo_category="convolution")
    assert _detect(b.serialize()) == FrameworkGuess(
        Framework.JAX, "XLA modules named as JAX names them (jit_…)")


def test_jax_reading_tf_data_stays_jax() -> None:
    b = _jax_cpu(version=False)
    b.plane("/host:CPU").line("tf_data", line_id=9).event("Iterator::Root::Prefetch", 0, US)
    assert _detect(b.serialize()).framework == Framework.JAX


@pytest.mark.parametrize("function", ["__inference_multi_step_on_iterator_1234",
                                      "__inference_one_step_on_iterator_77",
                                      "__inference_train_function_555"])
def test_keras_step_functions(function: str) -> None:
    b = XSpaceBuilder()
    python = b.plane("/host:CPU").line("python", line_id=1)
    python.event(f"EagerLocalExecute: {function}", 0, 100 * US)
    python.event("ExecutorState::Process", 10 * US, 50 * US)
    assert _detect(b.serialize()).framework == Framework.KERAS


@pytest.mark.parametrize(("name", "prefix"), [
    ("ExecutorState::Process", "ExecutorState::Process"), ("FunctionRun", "FunctionRun"),
    ("EagerKernelExecute", "EagerKernelExecute"), ("Iterator::Root::Map", "Iterator::"),
    ("SessionRun", "SessionRun")])
def test_tensorflow_runtime_events(name: str, prefix: str) -> None:
    b = XSpaceBuilder()
    b.plane("/host:CPU").line("tf_Compute", line_id=1).event(name, 0, US)
    assert _detect(b.serialize()) == FrameworkGuess(
        Framework.TENSORFLOW, f"TensorFlow runtime events ({prefix})")


def test_tf24_gpu_layouts() -> None:
    """Device-only TF 2.4 planes (`level 0`), and the grouped capture with its host events."""
    assert _detect(tf24_gpu_space(hlo=True)) == FrameworkGuess(
        Framework.TENSORFLOW, "device ops with TensorFlow <= 2.4's 'level 0' op stat")
    assert _detect(tf24_grouped_gpu_space()).framework == Framework.TENSORFLOW


def test_tensorflow_kernels_alone() -> None:
    """TF >= 2.5 device-only capture, XLA-compiled (hlo_module) or not: `tf_op` "name:Type"."""
    for xla in ({}, {"hlo_op": "dot.1", "hlo_module": "cluster_0"}):
        b = XSpaceBuilder()
        stream = b.gpu_plane(0).line("Stream #1(Kernel)", line_id=1)
        stream.kernel("volta_sgemm", 0, 5 * US, 1, tf_op="dense/MatMul:MatMul", **xla)
        assert _detect(b.serialize()) == FrameworkGuess(
            Framework.TENSORFLOW, "TensorFlow ops on the device (tf_op dense/MatMul:MatMul)")


def test_xla_ops_of_no_tensorflow_op_are_jax() -> None:
    b = XSpaceBuilder()
    b.plane("/host:CPU").line("tf_XLAEigen/1", line_id=1).event(
        "fusion.2", 0, US, hlo_op="fusion.2", hlo_module="main")
    assert _detect(b.serialize()) == FrameworkGuess(
        Framework.JAX, "XLA ops (hlo_module) of no TensorFlow op")


def test_unknown_and_names_that_only_look_alike() -> None:
    """Prefixes count at a name's start only; a needle split over two names is no match."""
    b = XSpaceBuilder()
    python = b.plane("/host:CPU").line("python", line_id=1)
    for name in ("train", "MyPjitFunction(f)", "load_step_on", "_iterator", "xFunctionRun"):
        python.event(name, 0, US)
    assert _detect(b.serialize()) == FrameworkGuess(Framework.UNKNOWN, "")
    assert _detect(XSpaceBuilder().serialize()) == FrameworkGuess(Framework.UNKNOWN, "")
