"""Programs: XLA module names, host dispatch, tf.function calls, collectives.

| what                   | producer                 | written as                            |
|------------------------|--------------------------|---------------------------------------|
| module of an execution | XLA on TPU (Modules line)| `jit_f(12193…)`: name(fingerprint)    |
| host dispatch of a call| JAX (jaxlib)             | `PjitFunction(f)` for module `jit_f`  |
| host side of a call    | XLA on GPU               | `jit_f:XLA GPU module`, launches in it|
| a call, buffers in it  | PjRt (JAX 0.5+)          | `CommonPjRtLoadedExecutable::Execute  |
|                        |                          | (jit_f)`, allocations nested in it    |
| call of a tf.function  | TensorFlow 2 (eager)     | `EagerLocalExecute: __inference_f_12` |
|                        |                          | (its number: the concrete function)   |
| collective             | XLA (all producers)      | HLO op/category `all-reduce[-start]`, |
|                        |                          | `all-gather`, `reduce-scatter`,       |
|                        |                          | `all-to-all`, `collective-permute`... |
|                        | NCCL / RCCL kernels      | `nccl…`, `rccl…` kernel names         |
| transfer, its wait     | XLA (TPU: ops of their   | HLO op `copy-start`, `send`, `recv`;  |
|                        | own on XLA Ops)          | `copy-done`, `send-done`, `recv-done` |
| a kernel launch (host) | CUDA runtime / driver,   | `cudaLaunchKernel`, `cuLaunchKernel`, |
|                        | HIP                      | `hipModuleLaunchKernel`,              |
|                        |                          | `hipExtModuleLaunchKernel`, ... (JAX  |
|                        |                          | on ROCm: the op's stats on the call); |
|                        |                          | `hipMemsetAsync`, `cudaMemcpyAsync`...|
"""

from __future__ import annotations

import re

_TF_FUNCTION_CALL = re.compile(r"^EagerLocalExecute: __inference_(.+)_(\d+)$")
_MODULE_FINGERPRINT = re.compile(r"\(\d+\)$")
_JAX_DISPATCH = re.compile(r"^PjitFunction\((.+)\)$")
_COLLECTIVE_HLO = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all",
                   "ragged-all-to-all", "collective-permute", "collective-broadcast")
_COLLECTIVE_KERNEL = ("nccl", "rccl")
#: Runtime and driver API calls that launch a kernel or a graph of kernels.
_KERNEL_LAUNCH = re.compile(
    r"^(?:cuda|cu|hip|hipExt)(?:Module)?Launch(?:Kernel|CooperativeKernel"
    r"(?:MultiDevice)?|KernelMultiGpu|KernelGGL)(?:Ex(?:C)?)?(?:_v\d+|_ptsz)*$"
    r"|^(?:cuda|cu|hip)GraphLaunch(?:_v\d+|_ptsz)*$"
    r"|^hipExtModuleLaunchKernel$|^hipExtLaunchKernel(?:GGL)?$|^hipHccModuleLaunchKernel$")
#: Runtime and driver API calls that enqueue a memset or a copy on a device stream.
_ENQUEUE = re.compile(r"^(?:cuda|cu|hip)(Memset|Memcpy)\w*$")
KERNEL_LAUNCH_CALL = "Kernel launch"


def is_kernel_launch(event_name: str) -> bool:
    """Whether a host event is a runtime call that launches kernels (`hipModuleLaunchKernel`,
    `cudaLaunchKernel`, `cuLaunchKernel`, `cudaGraphLaunch`, ...)."""
    return bool(_KERNEL_LAUNCH.match(event_name))


def runtime_call_kind(event_name: str) -> str | None:
    """What a host call of the GPU runtime enqueues on a device: `KERNEL_LAUNCH_CALL`,
    "Memset" (`hipMemsetAsync`, `cudaMemsetAsync`, ...) or "Memcpy" (`hipMemcpyDtoDAsync`,
    `cuMemcpyHtoDAsync`, ...); None for any other event. Such a call is time in the runtime,
    never an op of the program, whatever op stats the tracer copies onto it."""
    if _KERNEL_LAUNCH.match(event_name):
        return KERNEL_LAUNCH_CALL
    match = _ENQUEUE.match(event_name)
    return match.group(1) if match else None


def module_display_name(text: str) -> str:
    """`jit_f(12193488)` -> `jit_f`: an XLA module as the user named it (no fingerprint)."""
    return _MODULE_FINGERPRINT.sub("", text)


def dispatched_module(event_name: str) -> str | None:
    """The module a host dispatch event runs: `PjitFunction(loss_fn)` -> `jit_loss_fn`."""
    match = _JAX_DISPATCH.match(event_name)
    return f"jit_{match.group(1)}" if match else None


#: PjRt's host-side execution of a compiled module (JAX 0.5 and later):
#: `CommonPjRtLoadedExecutable::Execute (jit_train_step)`.
_PJRT_EXECUTE = re.compile(r"^\S*LoadedExecutable::Execute \((.+)\)$")


def running_module(event_name: str) -> str | None:
    """The module a host event runs, for work nested in it (XLA's buffer allocations): a
    PjRt execution (`CommonPjRtLoadedExecutable::Execute (jit_f)`), XLA on GPU's
    `jit_f:XLA GPU module`, or JAX's dispatch `PjitFunction(f)`; else None."""
    match = _PJRT_EXECUTE.match(event_name)
    if match:
        return match.group(1)
    return host_execution_module(event_name) or dispatched_module(event_name)


def is_collective(text: str) -> bool:
    """An HLO op, HLO category or kernel name of a collective (all-reduce, NCCL, ...)."""
    lowered = text.lower()
    return lowered.startswith(_COLLECTIVE_HLO) or lowered.startswith(_COLLECTIVE_KERNEL)


#: XLA's transfers between memories or devices (async copies, host offload, send/recv) and the
#: ops that wait for them, by HLO op (`copy-done.2`); XLA on TPU runs them as ops of its own.
_TRANSFER_HLO = re.compile(r"^(?:copy-start|send|recv)(?:\.\d+)*$")
_TRANSFER_WAIT_HLO = re.compile(r"^(?:copy-done|send-done|recv-done)(?:\.\d+)*$")


def is_transfer(hlo_op: str) -> bool:
    """An HLO op that starts a transfer between memories or devices (`copy-start`, `send`,
    `recv`: async copies, host offload, point-to-point)."""
    return bool(_TRANSFER_HLO.match(hlo_op.lower()))


#: An async op's start (XLA issues it and moves on; the work is timed by its `-done`).
_ASYNC_START_HLO = re.compile(r"^(?:[a-z][\w-]*-start|send|recv)(?:\.\d+)*$")


def is_async_start(hlo_op: str) -> bool:
    """An HLO op that starts an async operation (`copy-start`, `all-reduce-start`,
    `async-start`, `send`, `recv`): its own time is the issue, not the transfer, so no rate
    over it means anything."""
    return bool(_ASYNC_START_HLO.match(hlo_op.lower()))


def is_transfer_wait(hlo_op: str) -> bool:
    """An HLO op that waits for a transfer to finish (`copy-done`, `send-done`,
    `recv-done`)."""
    return bool(_TRANSFER_WAIT_HLO.match(hlo_op.lower()))


_HOST_EXECUTION_SUFFIX = ":XLA GPU module"


def host_execution_module(event_name: str) -> str | None:
    """The module a host-side execution event runs (XLA on GPU writes one per call on the
    dispatching thread: `jit_loss_fn:XLA GPU module` -> `jit_loss_fn`), else None."""
    if event_name.endswith(_HOST_EXECUTION_SUFFIX):
        return event_name[: -len(_HOST_EXECUTION_SUFFIX)]
    return None


def tf_function_call(event_name: str) -> tuple[str, int] | None:
    """The tf.function an eager call event runs and its concrete function's number
    (`EagerLocalExecute: __inference_train_step_191` -> ("train_step", 191)), else None."""
    match = _TF_FUNCTION_CALL.match(event_name)
    return (match.group(1), int(match.group(2))) if match else None
