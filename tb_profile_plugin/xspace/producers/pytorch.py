"""PyTorch's Kineto Chrome-trace JSON: every name the decoder reads (xspace/kineto/) and the
XPlane names it writes them as (docs/pytorch.md has the whole mapping).

| Kineto (PyTorch 1.9 -> 2.x)                         | read as                                  |
|-----------------------------------------------------|------------------------------------------|
| `cat` `kernel` / `Kernel`                           | a kernel on `/device:GPU:<n>`             |
| `cat` `gpu_memcpy` / `Memcpy`, `gpu_memset` / `Memset` | a copy / memset on the GPU stream     |
| `cat` `gpu_user_annotation`                         | a DERIVED line of the GPU plane           |
| `cat` `cpu_op` / `Operator`                         | host op (launching op of kernels, op of   |
|                                                     | allocations)                              |
| `ProfilerStep#N` (`user_annotation` / `Operator`)   | a step root: `_r` = 1, `step_num` = N     |
| `cat` `Trace`, global instants (`s` = `g`)          | the profiler's window markers: dropped    |
| `[memory]` instants (`cpu_instant_event` or no cat) | `MemoryAllocation` / `MemoryDeallocation` |
| args `correlation`                                  | `correlation_id`                          |
| args `External id` / `external id`                  | joins a device event to its host op       |
| kernel args (registers, shared memory, grid, block, | `kernel_details` (`regs:… shm:… grid:…    |
| occupancy)                                          | block:… occ_pct:…`)                       |
| flows `fwdbwd` (`s` -> `f`)                         | `_pt`/`_p` -> `_ct`/`_c` (producer ->     |
|                                                     | consumer)                                 |

Files: `<worker>.<timestamp>.pt.trace.json[.gz]` (`tensorboard_trace_handler`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tb_profile_plugin.xspace.model import Profile
from tb_profile_plugin.xspace.producers.names import (
    CORRELATION_ID_STAT,
    KERNEL_DETAILS_STAT,
    TF_OP_STAT,
)
from tb_profile_plugin.xspace.schema import HOST_PLANE_NAME

# --------------------------------------------------------------------------------------------
# Files

KINETO_SUFFIXES = (".pt.trace.json", ".pt.trace.json.gz")
_WORKER = re.compile(r"^(.+?)\.(\d+)\.pt\.trace\.json(?:\.gz)?$")


def is_kineto_file(name: str) -> bool:
    """Whether a file name (or path) is one PyTorch's trace handler writes."""
    base = name.replace("\\", "/").rsplit("/", 1)[-1]
    return any(base.endswith(s) and len(base) > len(s) for s in KINETO_SUFFIXES)


def kineto_worker(name: str) -> tuple[str, int]:
    """`rank0.1795886940737484679.pt.trace.json` -> ("rank0", 1795886940737484679); a name with
    no numeric timestamp -> (everything before `.pt.trace.json`, -1)."""
    match = _WORKER.match(name)
    if match:
        return match.group(1), int(match.group(2))
    for suffix in KINETO_SUFFIXES[::-1]:
        if name.endswith(suffix):
            return name[: -len(suffix)], -1
    return name, -1


# --------------------------------------------------------------------------------------------
# The JSON object

TRACE_EVENTS_KEY = "traceEvents"
DEVICE_PROPERTIES_KEY = "deviceProperties"
DISTRIBUTED_INFO_KEY = "distributedInfo"
BASE_TIME_KEY = "baseTimeNanoseconds"
HOST_NAME_KEY = "host_name"
#: Keys some writers add for the framework's version.
VERSION_KEYS = ("pytorch_version", "torch_version", "PyTorch version")

# Event fields (Chrome trace format).
PH, CAT, NAME, PID, TID, TS, DUR, ARGS, FLOW_ID, SCOPE = (
    "ph", "cat", "name", "pid", "tid", "ts", "dur", "args", "id", "s")
SPAN_PHASE = "X"
INSTANT_PHASES = frozenset({"i", "I"})
FLOW_START_PHASE, FLOW_STEP_PHASE, FLOW_END_PHASE = "s", "t", "f"
METADATA_PHASE = "M"
GLOBAL_SCOPE = "g"
THREAD_NAME_EVENT = "thread_name"
PROCESS_NAME_EVENT = "process_name"
META_NAME_ARG = "name"

# --------------------------------------------------------------------------------------------
# Categories

KERNEL_CATEGORIES = frozenset({"kernel", "Kernel"})
MEMCPY_CATEGORIES = frozenset({"gpu_memcpy", "Memcpy"})
MEMSET_CATEGORIES = frozenset({"gpu_memset", "Memset"})
GPU_ANNOTATION_CATEGORIES = frozenset({"gpu_user_annotation"})
DEVICE_CATEGORIES = (KERNEL_CATEGORIES | MEMCPY_CATEGORIES | MEMSET_CATEGORIES
                     | GPU_ANNOTATION_CATEGORIES)
OP_CATEGORIES = frozenset({"cpu_op", "Operator"})
STEP_CATEGORIES = frozenset({"user_annotation", "Operator"})
TRACE_CATEGORIES = frozenset({"Trace"})
FWDBWD_CATEGORIES = frozenset({"fwdbwd"})
MEMORY_EVENT_NAME = "[memory]"
STEP_PATTERN = re.compile(r"^ProfilerStep#(\d+)$")

# --------------------------------------------------------------------------------------------
# Args

EXTERNAL_ID_ARGS = ("External id", "external id")
CORRELATION_ARG = "correlation"
DEVICE_ARG = "device"
STREAM_ARG = "stream"
GRID_ARG = "grid"
BLOCK_ARG = "block"
REGISTERS_ARG = "registers per thread"
SHARED_MEMORY_ARG = "shared memory"
OCCUPANCY_ARGS = ("est. achieved occupancy %", "theoretical occupancy %")
COPY_BYTES_ARG = "bytes"
MEMORY_BYTES_ARG = "Bytes"
TOTAL_ALLOCATED_ARG = "Total Allocated"
TOTAL_RESERVED_ARG = "Total Reserved"
DEVICE_TYPE_ARG = "Device Type"
DEVICE_ID_ARG = "Device Id"
ADDRESS_ARG = "Addr"
INPUT_DIMS_ARG = "Input Dims"
INPUT_TYPE_ARG = "Input type"
SEQUENCE_NUMBER_ARG = "Sequence number"
#: Args written under XPlane's name instead of their own.
RENAMED_ARGS = {CORRELATION_ARG: CORRELATION_ID_STAT}

#: c10's DeviceType codes (`Device Type` of `[memory]` events) as PyTorch spells devices.
DEVICE_TYPES = {0: "cpu", 1: "cuda", 2: "mkldnn", 3: "opengl", 4: "opencl", 5: "ideep",
                6: "hip", 7: "fpga", 8: "maia", 9: "xla", 10: "vulkan", 11: "metal", 12: "xpu",
                13: "mps", 14: "meta", 15: "hpu", 16: "ve", 17: "lazy", 18: "ipu", 19: "mtia",
                20: "privateuseone"}

# deviceProperties keys.
DEVICE_ID_KEY = "id"
DEVICE_NAME_KEY = "name"
DEVICE_PROPERTY_STATS = {  # Kineto key -> the plane stat CUPTI's XPlane writes
    "name": "gpu_device_name", "computeMajor": "compute_cap_major",
    "computeMinor": "compute_cap_minor", "numSms": "core_count", "totalGlobalMem": "memory_size",
}
DEVICE_VENDOR_STAT = "device_vendor"

# --------------------------------------------------------------------------------------------
# What the decoder writes (XPlane's names, read by the analyses)

#: Host plane: where the profile came from (what `detect_framework` reads).
PROFILE_SOURCE_STAT = "profile_source"
KINETO_SOURCE = "kineto"
PYTORCH_VERSION_STAT = "pytorch_version"
#: Host plane: `distributedInfo` entries, as `distributed_<key>`.
DISTRIBUTED_STAT_PREFIX = "distributed_"
OP_STAT = TF_OP_STAT
DETAILS_STAT = KERNEL_DETAILS_STAT
MEMCPY_DETAILS_STAT = "memcpy_details"
STEP_MARKER_STAT = "_r"
STEP_NUM_STAT = "step_num"
PRODUCER_TYPE_STAT, PRODUCER_ID_STAT = "_pt", "_p"
CONSUMER_TYPE_STAT, CONSUMER_ID_STAT = "_ct", "_c"
FWDBWD_FLOW_TYPE = 1
ALLOCATION_EVENT = "MemoryAllocation"
DEALLOCATION_EVENT = "MemoryDeallocation"
ALLOCATOR_NAME_STAT = "allocator_name"
BYTES_ALLOCATED_STAT = "bytes_allocated"
BYTES_AVAILABLE_STAT = "bytes_available"
PEAK_BYTES_STAT = "peak_bytes_in_use"
REQUESTED_BYTES_STAT = "requested_bytes"
ALLOCATION_BYTES_STAT = "allocation_bytes"
ADDRESS_STAT = "addr"
#: Line names: GPU streams as CUPTI names them on XPlane, and the annotations' own line.
STREAM_LINE_PREFIX = "Stream #"
GPU_ANNOTATION_LINE_PREFIX = "GPU user annotations"

#: The Kineto names no module outside producers spells (the names check reads this).
KINETO_ARG_NAMES = (
    EXTERNAL_ID_ARGS[0], CORRELATION_ARG, REGISTERS_ARG, OCCUPANCY_ARGS[0], TOTAL_ALLOCATED_ARG,
    TOTAL_RESERVED_ARG, INPUT_DIMS_ARG, PROFILE_SOURCE_STAT, MEMCPY_DETAILS_STAT,
)

_MEMCPY_KIND = re.compile(r"^Memcpy ?(HtoD|DtoH|DtoD|PtoP|HtoH|H2D|D2H|D2D|P2P)\b")


def memcpy_direction(event_name: str) -> str:
    """`Memcpy HtoD (Pageable -> Device)` -> "HtoD" (also the CUPTI spellings `H2D` ...);
    "" for any other name."""
    match = _MEMCPY_KIND.match(event_name)
    return match.group(1) if match else ""


def gpu_annotation_line_name(stream: int) -> str:
    return f"{GPU_ANNOTATION_LINE_PREFIX} ({STREAM_LINE_PREFIX}{stream})"


def is_gpu_annotation_line(line_name: str) -> bool:
    return line_name.startswith(GPU_ANNOTATION_LINE_PREFIX)


def device_vendor(device_name: str) -> str:
    lowered = device_name.lower()
    if "nvidia" in lowered or "tesla" in lowered or "geforce" in lowered:
        return "Nvidia"
    if "amd" in lowered or "instinct" in lowered or "radeon" in lowered:
        return "AMD"
    return ""


@dataclass(frozen=True)
class PyTorchFacts:
    """What a PyTorch profile says of its run (host plane stats): "" / -1 where not written."""

    version: str
    rank: int
    world_size: int
    backend: str
    nccl_version: str
    devices: tuple[str, ...]  # the GPUs' names, by device plane


def is_kineto_profile(profile: Profile) -> bool:
    """Whether the profile was decoded from a Kineto trace."""
    host = profile.plane(HOST_PLANE_NAME)
    return host is not None and host.stat_values().get(PROFILE_SOURCE_STAT) == KINETO_SOURCE


def pytorch_facts(profile: Profile) -> PyTorchFacts:
    """The run's PyTorch version, rank, world size, backend, NCCL version and GPUs."""
    host = profile.plane(HOST_PLANE_NAME)
    stats = host.stat_values() if host is not None else {}

    def text(key: str) -> str:
        value = stats.get(key)
        return "" if value is None else str(value)

    def number(key: str) -> int:
        value = stats.get(key)
        return value if isinstance(value, int) else -1

    devices = tuple(str(plane.stat_values().get(DEVICE_PROPERTY_STATS["name"], ""))
                    for plane in profile.planes if plane.name != HOST_PLANE_NAME)
    return PyTorchFacts(
        version=text(PYTORCH_VERSION_STAT),
        rank=number(DISTRIBUTED_STAT_PREFIX + "rank"),
        world_size=number(DISTRIBUTED_STAT_PREFIX + "world_size"),
        backend=text(DISTRIBUTED_STAT_PREFIX + "backend"),
        nccl_version=text(DISTRIBUTED_STAT_PREFIX + "nccl_version"),
        devices=devices,
    )
