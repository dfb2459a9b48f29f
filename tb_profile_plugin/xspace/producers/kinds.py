"""Device plane kinds and line kinds: which planes are devices, which lines hold real events.

Planes (`plane_kind`):

| plane name                         | kind          | counts as a device |
|------------------------------------|---------------|--------------------|
| `/host:CPU` and other `/host:*`    | HOST          | no                 |
| `/device:GPU:N`                    | GPU           | yes                |
| `/device:TPU:N`                    | TPU           | yes                |
| `/device:CUSTOM:*` (Megascale ...) | CUSTOM        | no (trace only)    |
| any other `/device:*`              | OTHER_DEVICE  | yes                |

Lines (`line_kind`). Derived-line ids are `0xDEADBEEF + k`; TF <= 2.4 wrote them as int32, so
they arrive sign-extended (-559038737 Steps, -559038735 Name Scope, -559038734 TF Ops) and are
read back modulo 2**32. TPU planes name their XLA lines with small ids (2, 3, 4, 6, 7).

| line                                        | kind          | analysed as events          |
|---------------------------------------------|---------------|-----------------------------|
| host thread                                 | THREAD        | yes (host)                  |
| GPU stream (`Stream #N(...)`), other device | STREAM        | yes (device)                |
| "XLA Ops" with a small id (TPU)             | XLA_OPS       | yes (device: the op source) |
| "XLA Modules" (any id)                      | XLA_MODULES   | no: program executions      |
| TPU `_counters_` (hardware counter samples) | COUNTERS      | no: samples, not ops        |
| TPU "Tensor Core" (zero-length markers)     | MARKERS       | no: markers, not ops        |
| "Steps" in the derived range                | STEPS         | no: the producer's steps    |
| PyTorch's `GPU user annotations (Stream #N)`| DERIVED       | no: ranges mirrored on GPU  |
| other derived lines (TF Ops, Name Scope,    | DERIVED       | no: they repeat real events |
| derived XLA Ops, Launch Stats, Async XLA    |               |                             |
| Ops, XLA TraceMe, Overlay, ...)             |               |                             |
"""

from __future__ import annotations

import enum

from tb_profile_plugin.xspace.model import Line, Plane
from tb_profile_plugin.xspace.producers.names import (
    STEPS_NAME,
    TPU_COUNTER_LINE_NAMES,
    TPU_DERIVED_LINE_NAMES,
    TPU_MARKER_LINE_NAMES,
    XLA_MODULES_NAME,
    XLA_OPS_NAME,
)
from tb_profile_plugin.xspace.producers.pytorch import is_gpu_annotation_line
from tb_profile_plugin.xspace.schema import (
    CUSTOM_PLANE_PREFIX,
    DERIVED_LINE_ID_MAX,
    DERIVED_LINE_ID_MIN,
    DERIVED_LINE_NAMES,
    DEVICE_PLANE_PREFIX,
    GPU_PLANE_PREFIX,
    TPU_PLANE_PREFIX,
)


class PlaneKind(enum.Enum):
    HOST = "host"
    GPU = "gpu"
    TPU = "tpu"
    CUSTOM = "custom"
    OTHER_DEVICE = "device"


def plane_kind(plane_name: str) -> PlaneKind:
    if plane_name.startswith(GPU_PLANE_PREFIX):
        return PlaneKind.GPU
    if plane_name.startswith(TPU_PLANE_PREFIX):
        return PlaneKind.TPU
    if plane_name.startswith(CUSTOM_PLANE_PREFIX):
        return PlaneKind.CUSTOM
    if plane_name.startswith(DEVICE_PLANE_PREFIX):
        return PlaneKind.OTHER_DEVICE
    return PlaneKind.HOST


def is_accelerator_plane(plane_name: str) -> bool:
    """A device whose events are device ops (GPU, TPU, other); CUSTOM planes are not."""
    return plane_kind(plane_name) in (PlaneKind.GPU, PlaneKind.TPU, PlaneKind.OTHER_DEVICE)


class LineKind(enum.Enum):
    THREAD = "thread"
    STREAM = "stream"
    XLA_OPS = "xla_ops"
    XLA_MODULES = "xla_modules"
    STEPS = "steps"
    DERIVED = "derived"
    COUNTERS = "counters"
    MARKERS = "markers"

    @property
    def holds_events(self) -> bool:
        """Whether the line's events are analysed (the others repeat or summarise them)."""
        return self in (LineKind.THREAD, LineKind.STREAM, LineKind.XLA_OPS)

    @property
    def producer_derived(self) -> bool:
        """Whether a profiler derived the line from others (shown once, never counted)."""
        return self in (LineKind.STEPS, LineKind.DERIVED, LineKind.XLA_MODULES)


def normalized_line_id(line_id: int) -> int:
    """The line id as the producer meant it: int32 sign-extended ids read back as uint32."""
    if -(2**31) <= line_id < 0:
        return line_id & 0xFFFFFFFF
    return line_id


def in_derived_id_range(line_id: int) -> bool:
    return DERIVED_LINE_ID_MIN <= normalized_line_id(line_id) <= DERIVED_LINE_ID_MAX


def line_kind(plane_name: str, line_id: int, line_name: str) -> LineKind:
    """What a line holds (see the module's table)."""
    if line_name == XLA_MODULES_NAME:
        return LineKind.XLA_MODULES
    derived_id = in_derived_id_range(line_id)
    if derived_id and line_name in DERIVED_LINE_NAMES:
        return LineKind.STEPS if line_name == STEPS_NAME else LineKind.DERIVED
    kind = plane_kind(plane_name)
    if kind == PlaneKind.HOST:
        return LineKind.THREAD
    if line_name == XLA_OPS_NAME:
        return LineKind.XLA_OPS
    if kind == PlaneKind.TPU and line_name in TPU_COUNTER_LINE_NAMES:
        return LineKind.COUNTERS  # a real Pallas capture: "Scalar ALU" 66.6 % of device time
    if kind == PlaneKind.TPU and line_name in TPU_MARKER_LINE_NAMES:
        return LineKind.MARKERS
    if line_name in TPU_DERIVED_LINE_NAMES or (derived_id and line_name in DERIVED_LINE_NAMES):
        return LineKind.DERIVED
    if line_name == STEPS_NAME:
        return LineKind.STEPS
    if is_gpu_annotation_line(line_name):
        return LineKind.DERIVED  # host ranges (ProfilerStep#N ...) mirrored on the stream
    return LineKind.STREAM


def kind_of(plane: Plane, line: Line) -> LineKind:
    return line_kind(plane.name, line.id, line.name)

