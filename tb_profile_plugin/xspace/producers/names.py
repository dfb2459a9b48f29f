"""Producers' names: the stats, lines and planes' words each producer writes.

The one place a producer's stat name is spelled. Every module that reads a stat by its name takes
the name from here (`GROUP_ID_STAT`, not "group_id"); `STAT_NAMES` lists every one, and
tests/unit/xspace/test_producer_names_in_one_place.py checks that no other module spells them.
"""

from __future__ import annotations

# --------------------------------------------------------------------------------------------
# Stats, by who writes them

#: TensorFlow's op of an event, `name:Type` (TF >= 2.5, also on TPU metadata as a JAX op path;
#: JAX's GPU runtime writes `XlaModule:` on every kernel).
TF_OP_STAT = "tf_op"
#: TensorFlow <= 2.4's op of a device event, `name:Type`.
TF24_OP_STAT = "level 0"
#: JAX's op path of a device event (`jit(f)/jvp()/dot_general`).
JAX_OP_NAME_STAT = "name"
#: XLA's HLO op of an event (`fusion.3`); on CPU, XLA's thunks.
HLO_OP_STAT = "hlo_op"
#: XLA's module of an event.
HLO_MODULE_STAT = "hlo_module"
#: XLA's program (module) id of an event (JAX on GPU, TPU).
PROGRAM_ID_STAT = "program_id"
#: XLA on TPU: the HLO category of an op (its type).
HLO_CATEGORY_STAT = "hlo_category"
#: XLA on TPU: the device's own time of an op.
DEVICE_DURATION_PS_STAT = "device_duration_ps"
#: XLA on TPU: where the op ran on the device (from its line's timestamp, as `offset_ps`).
DEVICE_OFFSET_PS_STAT = "device_offset_ps"
#: XLA on TPU (metadata): the op's FLOPs and bytes accessed.
FLOPS_STAT = "flops"
BYTES_ACCESSED_STAT = "bytes_accessed"
#: CUPTI / ROCm: a kernel's launch configuration (`regs:32 static_shared:0 ...`).
KERNEL_DETAILS_STAT = "kernel_details"
#: CUPTI / ROCm: ties a host launch to its device kernel or copy.
CORRELATION_ID_STAT = "correlation_id"
#: The profiler's own grouping of events into steps (TF's group_events, written before export).
GROUP_ID_STAT = "group_id"
#: The host event that marks a step of the profiler's grouping (its `step_name`).
STEP_NAME_STAT = "step_name"
#: The `/host:metadata` plane's JAX versions.
JAX_VERSION_STATS = ("jax_version", "jaxlib_version")

#: Every stat name the producers modules define (the names no other module spells).
STAT_NAMES = (
    TF_OP_STAT, TF24_OP_STAT, JAX_OP_NAME_STAT, HLO_OP_STAT, HLO_MODULE_STAT, PROGRAM_ID_STAT,
    HLO_CATEGORY_STAT, DEVICE_DURATION_PS_STAT, DEVICE_OFFSET_PS_STAT, FLOPS_STAT,
    BYTES_ACCESSED_STAT, KERNEL_DETAILS_STAT, CORRELATION_ID_STAT, GROUP_ID_STAT, STEP_NAME_STAT,
    *JAX_VERSION_STATS,
)

# --------------------------------------------------------------------------------------------
# Lines

XLA_OPS_NAME = "XLA Ops"
XLA_MODULES_NAME = "XLA Modules"
STEPS_NAME = "Steps"
#: Names TPU planes give their own (non-op) lines, whatever their id.
TPU_DERIVED_LINE_NAMES = frozenset({"Async XLA Ops", "XLA TraceMe", "Overlay"})
#: TPU lines that are no ops: the hardware counters' samples (`_counters_`: events named
#: "Scalar ALU", "Vector Load" ... with durations) and zero-length markers ("Tensor Core").
TPU_COUNTER_LINE_NAMES = frozenset({"_counters_"})
TPU_MARKER_LINE_NAMES = frozenset({"Tensor Core"})
