"""Framework detection: the framework that wrote a profile (TensorFlow, Keras, JAX).

Frameworks (`detect_framework`), from name tables and plane stats only, first row that matches:

| evidence                                                          | framework  |
|-------------------------------------------------------------------|------------|
| a Kineto trace (`/host:CPU` stat `profile_source` = `kineto`)     | PyTorch    |
| `/host:metadata` plane stat `jax_version` / `jaxlib_version`      | JAX        |
| event named `*step_on_iterator*` (Keras 3 fit) or                 | Keras      |
| `__inference_train_function*` (tf.keras fit)                      |            |
| host event `PjitFunction(f)` / `PmapFunction(f)`; a kernel        | JAX        |
| `tf_op` of `XlaModule:`; XLA modules named `jit_*` / `pmap_*`     |            |
| (Hlo Proto names on `/host:metadata`, "XLA Modules" events)       |            |
| `ExecutorState::Process`, `FunctionRun`, `EagerKernelExecute`,    | TensorFlow |
| `EagerLocalExecute`, `Iterator::*`, `SessionRun`; device stat     |            |
| `level 0` (TF <= 2.4)                                             |            |
| a `tf_op` value in TF's `name:Type` form                          | TensorFlow |
| `hlo_module` (XLA ops) without them                               | JAX        |
| none of these                                                     | UNKNOWN    |

JAX comes before TensorFlow's names because a JAX program may read its input with tf.data
(`Iterator::*` events) and stays a JAX program.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass

import numpy as np

from tb_profile_plugin.xspace.model import Plane, Profile, StringTable
from tb_profile_plugin.xspace.producers.columns import split_framework_op
from tb_profile_plugin.xspace.producers.kinds import PlaneKind, plane_kind
from tb_profile_plugin.xspace.producers.names import (
    HLO_MODULE_STAT,
    JAX_VERSION_STATS,
    TF24_OP_STAT,
    TF_OP_STAT,
    XLA_MODULES_NAME,
)
from tb_profile_plugin.xspace.producers.pytorch import is_kineto_profile
from tb_profile_plugin.xspace.producers.text_codes import str_codes
from tb_profile_plugin.xspace.schema import METADATA_PLANE_NAME


class Framework(enum.Enum):
    """The framework of the profiled program; the value is how it is shown."""

    TENSORFLOW = "TensorFlow"
    KERAS = "Keras"
    JAX = "JAX"
    PYTORCH = "PyTorch"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class FrameworkGuess:
    """The framework a profile shows, and what showed it (in words, for diagnostics)."""

    framework: Framework
    evidence: str  # "" for UNKNOWN


#: jaxlib's host events for one call of a jitted (pmapped) function.
_JAX_DISPATCH_PREFIXES = ("PjitFunction(", "PmapFunction(")
#: The `tf_op` JAX's GPU runtime writes on every kernel (interned: a stat metadata name).
_JAX_KERNEL_TF_OP = "XlaModule:"
#: XLA module names as JAX gives them (`jit_<fn>`, `pmap_<fn>`): Hlo Proto names on the
#: metadata plane and the events of "XLA Modules" lines.
_JAX_MODULE_PREFIXES = ("jit_", "pmap_")
#: Step functions of model.fit: Keras 3 (`__inference_multi_step_on_iterator_123`,
#: `one_step_on_iterator`) and tf.keras 2 (`__inference_train_function_123`).
_KERAS_STEP_FUNCTIONS = ("step_on_iterator", "__inference_train_function")
#: TensorFlow's runtime events (graph executor, tf.function runs, eager ops, tf.data, TF1).
_TF_RUNTIME_PREFIXES = ("ExecutorState::Process", "FunctionRun", "EagerKernelExecute",
                        "EagerLocalExecute", "Iterator::", "SessionRun")


def detect_framework(profile: Profile) -> FrameworkGuess:
    """The framework that wrote `profile`, from its name tables and plane stats (no event loop).

    Rules, first match wins (see the module docstring's "Frameworks" table):

    0. a PyTorch (Kineto) trace, by the source the decoder wrote (`is_kineto_profile`): PyTorch;
    1. the `/host:metadata` plane's `jax_version` / `jaxlib_version` stat: JAX;
    2. a Keras step function among the event names (`*step_on_iterator*`,
       `__inference_train_function*`): Keras (model.fit on TensorFlow);
    3. JAX's host dispatch events (`PjitFunction(f)`, `PmapFunction(f)`), the `XlaModule:`
       op JAX's GPU runtime writes on kernels, or XLA modules named `jit_*`/`pmap_*`: JAX
       (before TensorFlow's names: a JAX program may read its data through tf.data);
    4. TensorFlow's runtime events (`ExecutorState::Process`, `FunctionRun`,
       `EagerKernelExecute`, `Iterator::`, ...) or TF <= 2.4's `level 0` op stat: TensorFlow;
    5. a `tf_op` value in TensorFlow's `name:Type` form (a device-only TF capture): TensorFlow;
    6. XLA ops (`hlo_module`) without them: JAX;
    7. otherwise UNKNOWN.
    """
    if is_kineto_profile(profile):
        return FrameworkGuess(Framework.PYTORCH, "a PyTorch (Kineto) trace")
    metadata = profile.plane(METADATA_PLANE_NAME)
    if metadata is not None:
        stats = metadata.stat_values()
        for key in JAX_VERSION_STATS:
            if stats.get(key):
                return FrameworkGuess(
                    Framework.JAX, f"the {METADATA_PLANE_NAME} plane's {key} {stats[key]}")
    for plane in profile.planes:
        found = _names_containing(plane.event_metadata.names, _KERAS_STEP_FUNCTIONS)
        if found:
            return FrameworkGuess(Framework.KERAS, f"Keras step function events (*{found}*)")
    for plane in profile.planes:
        found = _names_starting(plane.event_metadata.names, _JAX_DISPATCH_PREFIXES)
        if found:
            return FrameworkGuess(Framework.JAX, f"JAX's dispatch events ({found}…))")
    for plane in profile.planes:
        if _JAX_KERNEL_TF_OP in _stat_names(plane):
            return FrameworkGuess(Framework.JAX, f"kernels with JAX's tf_op "
                                                 f"'{_JAX_KERNEL_TF_OP}'")
    for plane in profile.planes:
        found = _names_starting(_module_names(plane), _JAX_MODULE_PREFIXES)
        if found:
            return FrameworkGuess(Framework.JAX, f"XLA modules named as JAX names them "
                                                 f"({found}…)")
    for plane in profile.planes:
        found = _names_starting(plane.event_metadata.names, _TF_RUNTIME_PREFIXES)
        if found:
            return FrameworkGuess(Framework.TENSORFLOW, f"TensorFlow runtime events ({found})")
        if plane_kind(plane.name) != PlaneKind.HOST and TF24_OP_STAT in _stat_names(plane):
            return FrameworkGuess(Framework.TENSORFLOW, "device ops with TensorFlow <= 2.4's "
                                                        "'level 0' op stat")
    return _from_device_ops(profile)


#: The Python tracer's events (JAX's `jax.profiler.trace` default, TF's python_tracer_level):
#: `$<file>:<line> <function>`, `$<unknown> <function>` for C functions it saw called.
_PYTHON_FUNCTION = re.compile(r"^\$(\S+) (.+)$")


def python_function_label(event_name: str) -> str:
    """`$train.py:84 batch` -> `batch (train.py:84)`; other names as they are."""
    match = _PYTHON_FUNCTION.match(event_name)
    if match is None:
        return event_name
    where, function = match.groups()
    return function if where == "<unknown>" else f"{function} ({where})"


def launches_from_untied_threads(framework: Framework) -> bool:
    """Whether the framework's runtime launches a step's device work from threads that no flow
    ties to the step: JAX's PjRt copies each step's inputs to the GPU from its
    `pjrt_async_work_runner` threads (`MemcpyH2D` launches, correlated with the device copy,
    after the `H2D Dispatch` that a flow does reach). Such launches take their step by time."""
    return framework == Framework.JAX


def _from_device_ops(profile: Profile) -> FrameworkGuess:
    """Rules 5 and 6: ops by their `tf_op` values (distinct values per stat column, found
    with numpy) and XLA's `hlo_module` stat. Reached only when no name decided."""
    for plane in profile.planes:
        stat_id = plane.stat_metadata.id_of(TF_OP_STAT)
        if stat_id is None:
            continue
        columns = [(line.stats, len(line.events)) for line in plane.lines]
        columns.append((plane.event_metadata.stats, len(plane.event_metadata.ids)))
        for stats, rows in columns:
            for text in str_codes(stats, stat_id, rows, plane)[1]:
                if split_framework_op(text)[1]:
                    return FrameworkGuess(Framework.TENSORFLOW,
                                          f"TensorFlow ops on the device (tf_op {text})")
    if any(HLO_MODULE_STAT in _stat_names(plane) for plane in profile.planes):
        return FrameworkGuess(Framework.JAX, "XLA ops (hlo_module) of no TensorFlow op")
    return FrameworkGuess(Framework.UNKNOWN, "")


def _stat_names(plane: Plane) -> set[str]:
    """The plane's stat metadata names: stat keys and interned (ref) values."""
    return set(plane.stat_metadata.names.tolist())


def _module_names(plane: Plane) -> StringTable:
    """Names of XLA modules: the metadata plane's (one per Hlo Proto), else the events of
    the plane's "XLA Modules" lines."""
    if plane.name == METADATA_PLANE_NAME:
        return plane.event_metadata.names
    meta = plane.event_metadata
    rows = [meta.rows_of(np.unique(line.events.metadata_id)) for line in plane.lines
            if line.name == XLA_MODULES_NAME]
    used = np.unique(np.concatenate(rows)) if rows else np.zeros(0, np.int64)
    return StringTable.from_strings([meta.names[int(r)] for r in used[used >= 0].tolist()])


def _names_starting(table: StringTable, prefixes: tuple[str, ...]) -> str:
    """The first of `prefixes` that some name of `table` starts with, else "" (vectorised
    over the names: the names that still match, compared one byte of the prefix at a time)."""
    starts = table.offsets[:-1]
    lengths = np.diff(table.offsets)
    for prefix in prefixes:
        raw = prefix.encode()
        candidates = starts[lengths >= len(raw)]
        for k, byte in enumerate(raw):  # bytes of the prefix, narrowing the names
            candidates = candidates[table.blob[candidates + k] == byte]
            if not len(candidates):
                break
        if len(candidates):
            return prefix
    return ""


def _names_containing(table: StringTable, needles: tuple[str, ...]) -> str:
    """The first of `needles` that some name of `table` contains, else "" (a byte search of
    the names' blob; a match across two names does not count)."""
    data = table.blob.tobytes()
    for needle in needles:
        raw = needle.encode()
        at = data.find(raw)
        while at >= 0:
            name = int(np.searchsorted(table.offsets, at, side="right")) - 1
            if at + len(raw) <= int(table.offsets[name + 1]):
                return needle
            at = data.find(raw, at + 1)
    return ""
