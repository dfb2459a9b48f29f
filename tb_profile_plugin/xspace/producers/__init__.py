"""Producers' conventions in one place: which lines hold real events, and what each event is.

Every producer (TensorFlow old and new, JAX with CUPTI or ROCm, XLA on TPU, XLA on CPU) writes
the same XSpace format with different conventions. This package turns them into one vocabulary;
the analyses above read only what it returns (`PlaneKind`, `LineKind`, `CanonicalColumns`) and
the names it defines, never a producer's stat names spelled on their own.

| module        | what                                                                      |
|---------------|---------------------------------------------------------------------------|
| `names`       | stat and line names the producers write (`STAT_NAMES`: every stat name)   |
| `kinds`       | plane kinds (host, GPU, TPU, ...) and line kinds (thread, stream, ...)    |
| `text_codes`  | stat values as shared text codes; one line's stats by name                |
| `columns`     | canonical columns of every analysed event (op, HLO op, module, kernel)    |
| `event_names` | the names the trace shows events by (TPU: the ops' display names)         |
| `framework`   | the framework that wrote a profile (TensorFlow, Keras, JAX)               |
| `programs`    | XLA module names, host dispatch, tf.function calls, collectives           |
| `pytorch`     | PyTorch's Kineto JSON: categories, arg names, what the decoder writes     |

Every public name is re-exported here: `from tb_profile_plugin.xspace.producers import X`.
"""

from __future__ import annotations

from tb_profile_plugin.xspace.producers.columns import (
    NO_DEVICE_OFFSET,
    CanonicalColumns,
    canonical_columns,
    hlo_kind,
    split_framework_op,
)
from tb_profile_plugin.xspace.producers.event_names import (
    shows_display_names,
    trace_event_names,
)
from tb_profile_plugin.xspace.producers.framework import (
    Framework,
    FrameworkGuess,
    detect_framework,
    launches_from_untied_threads,
    python_function_label,
)
from tb_profile_plugin.xspace.producers.kinds import (
    LineKind,
    PlaneKind,
    in_derived_id_range,
    is_accelerator_plane,
    kind_of,
    line_kind,
    normalized_line_id,
    plane_kind,
)
from tb_profile_plugin.xspace.producers.names import (
    BYTES_ACCESSED_STAT,
    CORRELATION_ID_STAT,
    DEVICE_DURATION_PS_STAT,
    FLOPS_STAT,
    GROUP_ID_STAT,
    HLO_CATEGORY_STAT,
    HLO_MODULE_STAT,
    HLO_OP_STAT,
    JAX_OP_NAME_STAT,
    JAX_VERSION_STATS,
    KERNEL_DETAILS_STAT,
    PROGRAM_ID_STAT,
    STEP_NAME_STAT,
    STEPS_NAME,
    TF24_OP_STAT,
    TF_OP_STAT,
    TPU_DERIVED_LINE_NAMES,
    XLA_MODULES_NAME,
    XLA_OPS_NAME,
)
from tb_profile_plugin.xspace.producers.names import (
    STAT_NAMES as _PRODUCER_STAT_NAMES,
)
from tb_profile_plugin.xspace.producers.programs import (
    dispatched_module,
    host_execution_module,
    is_async_start,
    is_collective,
    is_kernel_launch,
    is_transfer,
    is_transfer_wait,
    module_display_name,
    running_module,
    runtime_call_kind,
    tf_function_call,
)
from tb_profile_plugin.xspace.producers.pytorch import (
    KINETO_ARG_NAMES,
    KINETO_SUFFIXES,
    PyTorchFacts,
    is_kineto_file,
    is_kineto_profile,
    kineto_worker,
    memcpy_direction,
    pytorch_facts,
)
from tb_profile_plugin.xspace.producers.text_codes import TextIndex, str_codes

#: Every stat name the producers modules define, PyTorch's Kineto arg names among them (the
#: names no other module spells: tests/unit/xspace/test_producer_names_in_one_place.py).
STAT_NAMES = (*_PRODUCER_STAT_NAMES, *KINETO_ARG_NAMES)

__all__ = [
    "KINETO_ARG_NAMES",
    "KINETO_SUFFIXES",
    "PyTorchFacts",
    "is_kineto_file",
    "is_kineto_profile",
    "kineto_worker",
    "memcpy_direction",
    "pytorch_facts",
    "NO_DEVICE_OFFSET",
    "BYTES_ACCESSED_STAT",
    "CORRELATION_ID_STAT",
    "DEVICE_DURATION_PS_STAT",
    "FLOPS_STAT",
    "GROUP_ID_STAT",
    "HLO_CATEGORY_STAT",
    "HLO_MODULE_STAT",
    "HLO_OP_STAT",
    "JAX_OP_NAME_STAT",
    "JAX_VERSION_STATS",
    "KERNEL_DETAILS_STAT",
    "PROGRAM_ID_STAT",
    "STAT_NAMES",
    "STEPS_NAME",
    "STEP_NAME_STAT",
    "TF24_OP_STAT",
    "TF_OP_STAT",
    "TPU_DERIVED_LINE_NAMES",
    "XLA_MODULES_NAME",
    "XLA_OPS_NAME",
    "CanonicalColumns",
    "Framework",
    "FrameworkGuess",
    "LineKind",
    "PlaneKind",
    "TextIndex",
    "canonical_columns",
    "detect_framework",
    "dispatched_module",
    "hlo_kind",
    "host_execution_module",
    "in_derived_id_range",
    "is_accelerator_plane",
    "is_async_start",
    "is_collective",
    "is_kernel_launch",
    "is_transfer",
    "is_transfer_wait",
    "kind_of",
    "launches_from_untied_threads",
    "line_kind",
    "module_display_name",
    "normalized_line_id",
    "plane_kind",
    "python_function_label",
    "running_module",
    "runtime_call_kind",
    "shows_display_names",
    "split_framework_op",
    "str_codes",
    "tf_function_call",
    "trace_event_names",
]
