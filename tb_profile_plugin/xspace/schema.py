"""Names and codes of the XPlane format that the decoder and every layer above share.

Plane and line names follow TensorFlow's profiler conventions (xprof_reference.md §3.1):
host planes are `/host:CPU`, devices `/device:GPU:<n>` (or TPU/CUSTOM), and derived lines have
ids at or above `DERIVED_LINE_ID_MIN`.
"""

from __future__ import annotations

import enum

#: Bumped whenever the decoded columns change meaning or layout, or decoding refuses what it
#: accepted before; part of the cache key. 2: times checked at decode (no negative durations,
#: nothing past 2^58 ps), so entries decoded without the checks are misses. 3: the
#: scope-range plane kept by its name alone (PLANES_READ_BY_NAME). 4: a line's regular stats
#: as dense coded columns (dense_stats.py).
FORMAT_VERSION = 4

HOST_PLANE_NAME = "/host:CPU"
DEVICE_PLANE_PREFIX = "/device:"
GPU_PLANE_PREFIX = "/device:GPU:"
TPU_PLANE_PREFIX = "/device:TPU:"
CUSTOM_PLANE_PREFIX = "/device:CUSTOM:"
TASK_ENVIRONMENT_PLANE_NAME = "/host:Task Environment"
METADATA_PLANE_NAME = "/host:metadata"
#: JAX's GPU runtime (0.10+, CUPTI) writes the tree of its scope ranges here: one plane stat
#: and one stat metadata entry per range (id -> parent id, names empty), no lines; about one
#: per kernel launch (490,000 in a 2M-event capture of 10,000 steps). No view reads it.
SCOPE_RANGE_PLANE_NAME = "/host:__ScopeRangeCallStack__"
#: Planes decoded by their id and name alone: their stats and metadata tables are skipped
#: (read one protobuf object at a time they cost seconds and hundreds of MB on big captures).
PLANES_READ_BY_NAME = frozenset({SCOPE_RANGE_PLANE_NAME})

#: Lines the profiler derives from others (Steps, XLA Ops, ...) take ids from this range
#: (TF <= 2.4: sign-extended from int32). Host thread ids are arbitrary 64-bit numbers, so
#: the name is checked too: xspace/producers/ `line_kind` classifies lines.
DERIVED_LINE_ID_MIN = 0xDEADBEEF
DERIVED_LINE_ID_MAX = 0xDEADBEEF + 0xFF
DERIVED_LINE_NAMES = frozenset({
    "Steps", "TensorFlow Ops", "TensorFlow Name Scope", "XLA Ops", "XLA Modules",
    "Launch Stats", "Framework Ops", "Framework Name Scope", "Source code", "XLA TraceMe",
    "SparseCore Ops", "SparseCore Modules", "Async XLA Ops",
})


class StatKind(enum.IntEnum):
    """How to read `StatColumns.value` (the XStat `value` oneof case)."""

    NONE = 0
    DOUBLE = 1
    UINT64 = 2
    INT64 = 3
    STR = 4
    BYTES = 5
    REF = 6


def is_device_plane(plane_name: str) -> bool:
    return plane_name.startswith(DEVICE_PLANE_PREFIX)


def is_gpu_plane(plane_name: str) -> bool:
    return plane_name.startswith(GPU_PLANE_PREFIX)
