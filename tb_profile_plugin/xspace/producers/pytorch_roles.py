"""PyTorch's names the views read (Kineto traces): steps, the DataLoader, collectives, runtime
calls, sync points, matrix ops, and the roles of torch-tb-profiler's step breakdown.

| what                   | written as                                                          |
|------------------------|---------------------------------------------------------------------|
| a step                 | `ProfilerStep#<n>` (host `user_annotation`; since ~2024 mirrored    |
|                        | once on the GPU stream as a `gpu_user_annotation`: the same step)   |
| the capture's own span | `PyTorch Profiler (<n>)` (cat `Trace`)                              |
| the DataLoader         | `enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__`,    |
|                        | `..._SingleProcessDataLoaderIter.__next__`                          |
| host collective        | `nccl:all_reduce`, `gloo:all_reduce`, `ucc:*`, `mpi:*`;             |
|                        | `c10d::allreduce_` and other c10d ops; `record_param_comms`         |
| device collective      | `ncclDevKernel_AllReduce_Sum_f32_RING_LL`, `ncclKernel_*`,          |
|                        | `rcclGenericKernel`, custom all-reduce kernels                      |
|                        | (`cross_device_reduce_1stage`, `*all_reduce*`, `*allgather*`)       |
| runtime call           | `cudaLaunchKernel`, `cuLaunchKernelEx`, `cudaMemcpyAsync`,          |
|                        | `cudaStreamSynchronize`, `hipLaunchKernel`, ...                     |
| device copy / memset   | `Memcpy HtoD (Pageable -> Device)`, `Memset (Device)`               |
| sync point (host)      | `cudaStreamSynchronize`, `cudaDeviceSynchronize`,                   |
|                        | `cudaEventSynchronize` (and cu*/hip* forms); `aten::item`,          |
|                        | `aten::_local_scalar_dense` (`.item()`, `float(tensor)`)            |
| matrix ops             | `aten::mm`, `aten::addmm`, `aten::bmm`, `aten::baddbmm`,            |
|                        | `aten::matmul`, `aten::linear`, `aten::conv*`, `aten::convolution`, |
|                        | `aten::cudnn_convolution*`, `aten::_scaled_dot_product_*`, ...      |
"""

from __future__ import annotations

import re

STEP_PREFIX = "ProfilerStep#"
_TRACE_SPAN = re.compile(r"^PyTorch Profiler \(\d+\)$")
_DATALOADER = re.compile(r"^enumerate\(DataLoader\)#.*\.__next__$")
_HOST_COLLECTIVE_PREFIXES = ("nccl:", "gloo:", "ucc:", "mpi:", "c10d::", "record_param_comms")
_DEVICE_COLLECTIVE_WORDS = ("nccl", "rccl", "allreduce", "all_reduce", "allgather",
                            "all_gather", "reducescatter", "reduce_scatter", "alltoall",
                            "all_to_all", "cross_device_reduce", "sendrecv")
_RUNTIME = re.compile(r"^(?:cuda|cu|hip|hsa)[A-Z]")
_SYNC = re.compile(r"^(?:cuda|cu|hip)(?:Stream|Device|Event|Ctx)Synchronize(?:_v\d+|_ptsz)*$")
_SCALAR_READ = frozenset({"aten::item", "aten::_local_scalar_dense"})
_MATRIX_OP = re.compile(
    r"^aten::(?:mm|addmm|bmm|baddbmm|addbmm|matmul|linear|_addmm_activation|einsum"
    r"|conv\w*|convolution\w*|_convolution\w*|cudnn_convolution\w*|miopen_convolution\w*"
    r"|mkldnn_convolution\w*|_scaled_dot_product\w*|scaled_dot_product\w*|_scaled_mm"
    r"|_flash_attention\w*|_efficient_attention\w*)$")

#: Roles of torch-tb-profiler's step breakdown (analysis/pytorch/step_roles.py `ROLES`).
KERNEL, MEMCPY, MEMSET, COMMUNICATION, RUNTIME, DATALOADER, CPU_EXEC = range(7)
NO_ROLE = -1


def step_number(event_name: str) -> int | None:
    """`ProfilerStep#12` -> 12; None for any other name."""
    if event_name.startswith(STEP_PREFIX) and event_name[len(STEP_PREFIX):].isdigit():
        return int(event_name[len(STEP_PREFIX):])
    return None


def is_dataloader(event_name: str) -> bool:
    """The DataLoader's `__next__` range (one batch handed to the training loop)."""
    return bool(_DATALOADER.match(event_name))


def is_host_collective(event_name: str) -> bool:
    """A host range of a collective (`nccl:all_reduce`, `gloo:broadcast`, `c10d::allreduce_`)."""
    return event_name.startswith(_HOST_COLLECTIVE_PREFIXES)


def is_device_collective(kernel_name: str) -> bool:
    """A GPU kernel of a collective (NCCL/RCCL, custom all-reduce kernels)."""
    lowered = kernel_name.lower()
    return any(word in lowered for word in _DEVICE_COLLECTIVE_WORDS)


def is_runtime_call(event_name: str) -> bool:
    """A CUDA/HIP runtime or driver call (`cudaLaunchKernel`, `cuMemcpyAsync`, ...)."""
    return bool(_RUNTIME.match(event_name))


def sync_kind(event_name: str) -> str | None:
    """"sync" for a runtime call that waits for the device (`cudaStreamSynchronize`, ...),
    "item" for an op that reads a tensor's value to the host (`.item()`), else None."""
    if _SYNC.match(event_name):
        return "sync"
    if event_name in _SCALAR_READ:
        return "item"
    return None


def is_matrix_op(op_name: str) -> bool:
    """An aten op that can run on matrix units (Tensor Cores): GEMMs, convolutions,
    attention."""
    return bool(_MATRIX_OP.match(op_name))


def host_role(event_name: str) -> int:
    """The breakdown role of a host event by its name (NO_ROLE: a step marker or the
    capture's own span)."""
    if step_number(event_name) is not None or _TRACE_SPAN.match(event_name):
        return NO_ROLE
    if is_host_collective(event_name):
        return COMMUNICATION
    if is_runtime_call(event_name):
        return RUNTIME
    if is_dataloader(event_name):
        return DATALOADER
    return CPU_EXEC


def device_role(event_name: str) -> int:
    """The breakdown role of a device event by its name (NO_ROLE: a step mirrored on the
    GPU)."""
    if step_number(event_name) is not None:
        return NO_ROLE
    if event_name.startswith("Memcpy"):
        return MEMCPY
    if event_name.startswith("Memset"):
        return MEMSET
    if is_device_collective(event_name):
        return COMMUNICATION
    return KERNEL


#: GPU plane stats that give the GPU's SM count (the decoder writes `deviceProperties`'
#: `numSms` as XPlane's `core_count`).
SM_COUNT_STATS = ("core_count", "devcap_core_count", "numSms")


_LOADER_ITER = re.compile(r"^enumerate\(DataLoader\)#_(MultiProcessing|SingleProcess)"
                          r"DataLoaderIter\.__next__$")


def dataloader_workers(event_name: str) -> str:
    """What a DataLoader `__next__` range says of its workers: "workers" for
    `_MultiProcessingDataLoaderIter` (num_workers > 0), "main" for
    `_SingleProcessDataLoaderIter` (num_workers=0), "" otherwise."""
    match = _LOADER_ITER.match(event_name)
    if not match:
        return ""
    return "workers" if match.group(1) == "MultiProcessing" else "main"


#: The decoder's names for `[memory]` instants (docs/pytorch.md): no operators.
_MEMORY_EVENTS = frozenset({"MemoryAllocation", "MemoryDeallocation"})


def is_operator(event_name: str) -> bool:
    """A host event the operators view lists (aten ops, autograd nodes, record_function
    ranges, the DataLoader's batches): not a step marker, runtime call or allocator
    instant."""
    return not (step_number(event_name) is not None or is_runtime_call(event_name)
                or event_name in _MEMORY_EVENTS or bool(_TRACE_SPAN.match(event_name)))
