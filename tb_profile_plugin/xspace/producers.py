"""Producers' conventions in one place: which lines hold real events, and what each event is.

Every producer (TensorFlow old and new, JAX with CUPTI or ROCm, XLA on TPU, XLA on CPU) writes
the same XSpace format with different conventions. This module turns them into one vocabulary;
the analyses above read only what it returns (`PlaneKind`, `LineKind`, `CanonicalColumns`),
never a producer's stat names.

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
| "Steps" in the derived range                | STEPS         | no: the producer's steps    |
| other derived lines (TF Ops, Name Scope,    | DERIVED       | no: they repeat real events |
| derived XLA Ops, Launch Stats, Async XLA    |               |                             |
| Ops, XLA TraceMe, Overlay, ...)             |               |                             |

Canonical columns of every analysed event (`canonical_columns`), from whichever stats the
producer wrote, on the event or on its event metadata (the event's own stat wins):

| producer          | op name : op type               | HLO op         | module       | time       |
|-------------------|---------------------------------|----------------|--------------|------------|
| TF >= 2.5 (CUPTI) | `tf_op` = "name:Type"           | `hlo_op`       | `hlo_module` | duration   |
| TF <= 2.4 (CUPTI) | `level 0` = "name:Type"         | -              | -            | duration   |
| JAX GPU (CUPTI,   | `name` = JAX op path (`tf_op` = | `hlo_op`       | `hlo_module` | duration   |
| ROCm)             | "XlaModule:" names no op);      |                | `program_id` |            |
|                   | type: the path's last component |                |              |            |
| XLA on TPU        | metadata `tf_op` (JAX op path); | `display_name` | `program_id` | device_   |
|                   | type: metadata `hlo_category`   |                |              | duration_ps|
| XLA on CPU thunks | `hlo_op` (no framework op)      | `hlo_op`       | `hlo_module` | duration   |

An op named by a path without a type (JAX) is typed by the path's last component
(`jit(f)/jvp()/dot_general` -> `dot_general`), as the reference types it. Where no framework
op exists the op is named by its HLO op and typed by the HLO op's kind (`fusion.3` -> `fusion`).
TPU ops are typed by their `hlo_category`. The "kernel" of an event is its event name, except
on TPU XLA Ops lines where the metadata name is the whole HLO instruction text and the
`display_name` (or the HLO op) is used instead. `flops` and `bytes_accessed` (TPU metadata)
come along where written.

Frameworks (`detect_framework`), from name tables and plane stats only, first row that matches:

| evidence                                                          | framework  |
|-------------------------------------------------------------------|------------|
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

from tb_profile_plugin.xspace.hlo_modules import LOW_PRECISION_BITS, HloInstructions
from tb_profile_plugin.xspace.model import Line, Plane, Profile, StatColumns, StringTable
from tb_profile_plugin.xspace.schema import (
    CUSTOM_PLANE_PREFIX,
    DERIVED_LINE_ID_MAX,
    DERIVED_LINE_ID_MIN,
    DERIVED_LINE_NAMES,
    DEVICE_PLANE_PREFIX,
    GPU_PLANE_PREFIX,
    METADATA_PLANE_NAME,
    TPU_PLANE_PREFIX,
    StatKind,
)
from tb_profile_plugin.xspace.unique_rows import unique_rows


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

    @property
    def holds_events(self) -> bool:
        """Whether the line's events are analysed (the others repeat or summarise them)."""
        return self in (LineKind.THREAD, LineKind.STREAM, LineKind.XLA_OPS)

    @property
    def producer_derived(self) -> bool:
        """Whether a profiler derived the line from others (shown once, never counted)."""
        return self in (LineKind.STEPS, LineKind.DERIVED, LineKind.XLA_MODULES)


XLA_OPS_NAME = "XLA Ops"
XLA_MODULES_NAME = "XLA Modules"
STEPS_NAME = "Steps"
#: Names TPU planes give their own (non-op) lines, whatever their id.
_TPU_DERIVED_NAMES = frozenset({"Async XLA Ops", "XLA TraceMe", "Overlay"})


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
    if line_name in _TPU_DERIVED_NAMES or (derived_id and line_name in DERIVED_LINE_NAMES):
        return LineKind.DERIVED
    if line_name == STEPS_NAME:
        return LineKind.STEPS
    return LineKind.STREAM


def kind_of(plane: Plane, line: Line) -> LineKind:
    return line_kind(plane.name, line.id, line.name)


# --------------------------------------------------------------------------------------------
# The framework that wrote the profile (see the module docstring's "Frameworks" table)


class Framework(enum.Enum):
    """The framework of the profiled program; the value is how it is shown."""

    TENSORFLOW = "TensorFlow"
    KERAS = "Keras"
    JAX = "JAX"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class FrameworkGuess:
    """The framework a profile shows, and what showed it (in words, for diagnostics)."""

    framework: Framework
    evidence: str  # "" for UNKNOWN


_JAX_VERSION_STATS = ("jax_version", "jaxlib_version")
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
    metadata = profile.plane(METADATA_PLANE_NAME)
    if metadata is not None:
        stats = metadata.stat_values()
        for key in _JAX_VERSION_STATS:
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
        if plane_kind(plane.name) != PlaneKind.HOST and "level 0" in _stat_names(plane):
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
        stat_id = plane.stat_metadata.id_of("tf_op")
        if stat_id is None:
            continue
        columns = [(line.stats, len(line.events)) for line in plane.lines]
        columns.append((plane.event_metadata.stats, len(plane.event_metadata.ids)))
        for stats, rows in columns:
            for text in str_codes(stats, stat_id, rows, plane)[1]:
                if split_framework_op(text)[1]:
                    return FrameworkGuess(Framework.TENSORFLOW,
                                          f"TensorFlow ops on the device (tf_op {text})")
    if any("hlo_module" in _stat_names(plane) for plane in profile.planes):
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


# --------------------------------------------------------------------------------------------
# Canonical columns


@dataclass(frozen=True)
class CanonicalColumns:
    """Per event (rows of the lines given to `canonical_columns`): codes into `texts`, -1 none."""

    op_name: np.ndarray  # int32: framework op (TF op name, JAX op path), else the HLO op
    op_type: np.ndarray  # int32: TF op type, HLO category, or the HLO op's kind
    hlo_op: np.ndarray  # int32
    module: np.ndarray  # int32: XLA module / program
    kernel: np.ndarray  # int32: the event's own name (TPU: the HLO op, not its text)
    device_duration_ps: np.ndarray  # int64: the device's own time for the op
    flops: np.ndarray  # float64, NaN where not written
    bytes_accessed: np.ndarray  # float64, NaN where not written
    framework_typed: np.ndarray  # bool: the producer wrote "name:Type" (a TensorFlow op)
    low_precision: np.ndarray  # bool: computes in 16-bit (or narrower) floats, by its HLO
    texts: list[str]

    def text(self, code: int) -> str:
        return self.texts[code] if code >= 0 else ""

    def op_label(self, op_code: int, type_code: int) -> str:
        """How an op is shown: `name:Type` for a framework-typed (TF) op, else its name."""
        name = self.text(op_code)
        return f"{name}:{self.text(type_code)}" if name and type_code >= 0 else name


class TextIndex:
    """Strings to dense codes, shared by every column of one table."""

    def __init__(self) -> None:
        self.index: dict[str, int] = {}

    def code(self, text: str) -> int:
        return self.index.setdefault(text, len(self.index))

    def codes(self, texts: list[str]) -> np.ndarray:
        """Codes of `texts`, with a trailing -1 so that a local code -1 maps to -1."""
        return np.array([self.code(t) for t in texts] + [-1], np.int64)

    @property
    def texts(self) -> list[str]:
        return list(self.index)


def str_codes(stats: StatColumns, stat_id: int | None, num_rows: int,
              plane: Plane) -> tuple[np.ndarray, list[str]]:
    """A str/ref stat of `num_rows` rows as (local code per row, -1 where absent; texts).

    Vectorised: string values are padded into a fixed-width byte matrix and deduplicated with
    numpy, so millions of events cost no Python loop per event. Refs are resolved through the
    plane's stat metadata names. Codes are int32 (a line has fewer distinct texts than rows);
    a line without the stat gets one shared read-only -1, no column.
    """
    sel = stats.rows_with(stat_id) if stat_id is not None else None
    if sel is None or len(sel) == 0:
        return np.broadcast_to(np.int32(-1), (num_rows,)), []
    codes = np.full(num_rows, -1, np.int32)
    local = TextIndex()
    rows = stats.row[sel]
    kind = stats.kind[sel]
    is_ref = kind == StatKind.REF
    if is_ref.any():
        uniq, inverse = np.unique(stats.value[sel][is_ref], return_inverse=True)
        mapped = np.array([local.code(plane.stat_metadata.name_of(int(r)) or "")
                           for r in uniq.tolist()], np.int64)
        codes[rows[is_ref]] = mapped[inverse.ravel()]
    is_str = kind == StatKind.STR
    if is_str.any():
        offsets = stats.value[sel][is_str]
        lengths = stats.length[sel][is_str].astype(np.int64)
        width = max(int(lengths.max()), 1)
        matrix = np.zeros((len(offsets), width), np.uint8)
        cols = np.arange(width)
        mask = cols[None, :] < lengths[:, None]
        source = np.where(mask, offsets[:, None] + cols[None, :], 0)
        matrix[mask] = stats.strings[source[mask]]
        fixed = matrix.view(f"S{width}").ravel()
        uniq, inverse = np.unique(fixed, return_inverse=True)
        mapped = np.array([local.code(u.decode("utf-8", "replace")) for u in uniq.tolist()],
                          np.int64)
        codes[rows[is_str]] = mapped[inverse.ravel()]
    return codes, local.texts


def _text_codes(stats: StatColumns, stat_id: int, num_rows: int, plane: Plane,
                index: TextIndex) -> np.ndarray:
    """Shared-index codes of one stat over `num_rows` rows: its string or ref value, or an
    integer value written in decimal; -1 where absent."""
    local, texts = str_codes(stats, stat_id, num_rows, plane)
    out = index.codes(texts)[local]
    sel = stats.rows_with(stat_id)
    sel = sel[np.isin(stats.kind[sel], (StatKind.UINT64, StatKind.INT64))]
    if len(sel):
        uniq, inverse = np.unique(stats.value[sel], return_inverse=True)
        out[stats.row[sel]] = index.codes([str(int(v)) for v in uniq.tolist()])[inverse.ravel()]
    return out


class _LineStats:
    """Stats of one line's events by name, event stat first, then the event metadata's."""

    def __init__(self, plane: Plane, line: Line) -> None:
        self.plane = plane
        self.line = line
        self.n = len(line.events)
        self.meta_rows = plane.event_metadata.rows_of(line.events.metadata_id)

    def text(self, name: str, index: TextIndex) -> np.ndarray:
        """Shared-index codes of a string stat (or an integer one, written in decimal)."""
        plane = self.plane
        stat_id = plane.stat_metadata.id_of(name)
        if stat_id is None:
            return np.full(self.n, -1, np.int64)
        own = _text_codes(self.line.stats, stat_id, self.n, plane, index)
        meta = plane.event_metadata
        from_meta = np.append(_text_codes(meta.stats, stat_id, len(meta.ids), plane, index),
                              -1)[self.meta_rows]
        return np.where(own >= 0, own, from_meta)

    def number(self, name: str) -> np.ndarray:
        """A numeric stat as float64 (NaN where absent), event stat first."""
        plane = self.plane
        stat_id = plane.stat_metadata.id_of(name)
        if stat_id is None:
            return np.full(self.n, np.nan)
        own = self.line.stats.float_column(stat_id, self.n)
        meta = plane.event_metadata
        from_meta = np.append(meta.stats.float_column(stat_id, len(meta.ids)), np.nan)[
            self.meta_rows]
        return np.where(np.isnan(own), from_meta, own)

    def metadata_names(self, index: TextIndex, display: bool) -> np.ndarray:
        meta = self.plane.event_metadata
        names = meta.names.tolist()
        if display:
            shown = meta.display_names.tolist()
            names = [d or n for d, n in zip(shown, names, strict=True)]
        return index.codes(names)[self.meta_rows]


#: The op name JAX's GPU runtime writes into every kernel's `tf_op`: not an op.
_JAX_MODULE_PLACEHOLDER = "XlaModule"
_TF_OP = re.compile(r"^([A-Za-z0-9.][A-Za-z0-9_./>\-]*):([A-Za-z_][\w\-]*)?$")
_HLO_SUFFIX = re.compile(r"\.\d+$")


def split_framework_op(text: str) -> tuple[str, str]:
    """`name:Type` (TF) -> (name, Type); a JAX op path or a bare name -> (text, "").

    The JAX runtime's constant `XlaModule:` names no op: ("", "").
    """
    match = _TF_OP.match(text)
    if match:
        name, op_type = match.group(1), match.group(2) or ""
    else:
        name, op_type = text, ""
    if name == _JAX_MODULE_PLACEHOLDER and not op_type:
        return "", ""
    return name, op_type


def hlo_kind(hlo_op: str) -> str:
    """`gemm_fusion_dot.1` -> `gemm_fusion_dot`: the HLO op without its instance number."""
    return _HLO_SUFFIX.sub("", hlo_op)


def canonical_columns(lines: list[tuple[Plane, Line]],
                      hlo: HloInstructions | None = None) -> CanonicalColumns:
    """Canonical columns of every event of `lines`, concatenated in the given order. `hlo`:
    the profile's compiled modules, which name the op and precision of kernels whose events
    do not (xspace/hlo_modules.py)."""
    index = TextIndex()
    total = sum(len(line.events) for _, line in lines)
    # Each column made once at its default (no op, no figure) and each line's own values
    # written into its slice: a host line without XLA thunks writes only its durations (no
    # per-line arrays of constants concatenated: at 2M events that was 0.5 s of copies).
    out: dict[str, np.ndarray] = {key: np.full(total, default, dtype)
                                  for key, (dtype, default) in _CANONICAL.items()}
    at = 0
    for plane, line in lines:
        n = len(line.events)
        for key, column in _line_columns(plane, line, index, hlo).items():
            out[key][at : at + n] = column
        at += n
    return CanonicalColumns(
        out["op_name"], out["op_type"], out["hlo_op"], out["module"], out["kernel"],
        out["device_duration_ps"], out["flops"], out["bytes_accessed"],
        out["framework_typed"], out["low_precision"], index.texts,
    )


#: The canonical columns: dtype and the value of an event that has none.
#: Text codes are int32 (a profile has far fewer than 2^31 distinct texts; 20 bytes per event
#: less than int64 in columns made for every event of the table).
_CANONICAL: dict[str, tuple[type, object]] = {
    "op_name": (np.int32, -1), "op_type": (np.int32, -1), "hlo_op": (np.int32, -1),
    "module": (np.int32, -1), "kernel": (np.int32, -1), "device_duration_ps": (np.int64, 0),
    "flops": (np.float64, np.nan), "bytes_accessed": (np.float64, np.nan),
    "framework_typed": (np.bool_, False), "low_precision": (np.bool_, False),
}


def _host_line_columns(plane: Plane, line: Line, index: TextIndex) -> dict[str, np.ndarray]:
    """Host threads: only XLA's CPU thunks (`hlo_op`) are ops here; the other columns keep
    their defaults (`_CANONICAL`: only the columns that differ are returned)."""
    out = {"device_duration_ps": line.events.duration_ps}
    if plane.stat_metadata.id_of("hlo_op") is None:
        return out
    stats = _LineStats(plane, line)
    hlo = stats.text("hlo_op", index)
    if not np.any(hlo >= 0):
        return out
    module = stats.text("hlo_module", index)
    out.update(op_name=hlo, op_type=_hlo_kinds(hlo, index), hlo_op=hlo,
               module=np.where(module >= 0, module, stats.text("program_id", index)))
    return out


def _path_leaves(op_name: np.ndarray, index: TextIndex) -> np.ndarray:
    """Per event: the code of its op path's last component (`jit(f)/jvp()/dot_general` ->
    `dot_general`)."""
    present = np.unique(op_name)
    texts = index.texts
    leaves = np.full(len(texts) + 1, -1, np.int64)
    for code in present.tolist():  # distinct op names, not events
        leaves[code] = index.code(texts[code].rsplit("/", 1)[-1])
    return leaves[op_name]


def _hlo_kinds(hlo: np.ndarray, index: TextIndex) -> np.ndarray:
    """Per event: the code of its HLO op's kind (`hlo_kind`), -1 where it has no HLO op."""
    present = np.unique(hlo[hlo >= 0])
    texts = index.texts
    kinds = np.full(len(texts) + 1, -1, np.int64)
    for code in present.tolist():  # distinct HLO ops, not events
        kinds[code] = index.code(hlo_kind(texts[code]))
    return kinds[hlo]


def _line_columns(plane: Plane, line: Line, index: TextIndex,
                  hlo_ops: HloInstructions | None = None) -> dict[str, np.ndarray]:
    if plane_kind(plane.name) == PlaneKind.HOST:
        return _host_line_columns(plane, line, index)
    stats = _LineStats(plane, line)
    xla_line = kind_of(plane, line) == LineKind.XLA_OPS
    # Framework op: TF >= 2.5 / TPU metadata `tf_op`, TF <= 2.4 `level 0`.
    framework = stats.text("tf_op", index)
    older = stats.text("level 0", index)
    framework = np.where(framework >= 0, framework, older)
    texts = index.texts
    op_name = np.full(stats.n, -1, np.int64)
    op_type = np.full(stats.n, -1, np.int64)
    present = np.unique(framework[framework >= 0])
    if len(present):  # one parse per distinct text, not per event
        name_of = np.full(len(texts) + 1, -1, np.int64)
        type_of = np.full(len(texts) + 1, -1, np.int64)
        for code in present.tolist():
            name, op_t = split_framework_op(texts[code])
            name_of[code] = index.code(name) if name else -1
            type_of[code] = index.code(op_t) if op_t else -1
        op_name = name_of[framework]
        op_type = type_of[framework]
    framework_typed = op_type >= 0
    jax_name = stats.text("name", index)
    hlo = stats.text("hlo_op", index)
    kernel = stats.metadata_names(index, display=xla_line)
    if xla_line:
        hlo = np.where(hlo >= 0, hlo, kernel)
    module = stats.text("hlo_module", index)
    program = stats.text("program_id", index)
    low_precision = np.zeros(stats.n, bool)
    if hlo_ops is not None and len(hlo_ops):
        from_hlo = _from_hlo(hlo_ops, index, kernel, hlo, program, module)
        # The instruction's own op wins over `name`, which may hold only its scope
        # (`jit(f)` for a fusion XLA made of `jit(f)/tanh`), as the reference reads it.
        jax_name = np.where(from_hlo.op_name >= 0, from_hlo.op_name, jax_name)
        hlo = from_hlo.hlo_op
        low_precision = from_hlo.low_precision
    op_name = np.where(op_name >= 0, op_name, jax_name)
    op_type = np.where(op_type >= 0, op_type, stats.text("hlo_category", index))
    untyped = (op_type < 0) & (op_name >= 0)
    if untyped.any():  # a JAX op path is typed by its last component, as the reference does
        op_type[untyped] = _path_leaves(op_name[untyped], index)
    op_name = np.where(op_name >= 0, op_name, hlo)
    missing = (op_type < 0) & (hlo >= 0)
    if missing.any():
        op_type[missing] = _hlo_kinds(hlo[missing], index)
    module = np.where(module >= 0, module, program)
    device_ps = stats.number("device_duration_ps")
    duration = line.events.duration_ps
    device_duration = np.where(np.isnan(device_ps), duration,
                               np.nan_to_num(device_ps)).astype(np.int64)
    return {
        "op_name": op_name, "op_type": op_type, "hlo_op": hlo, "module": module,
        "kernel": kernel, "device_duration_ps": device_duration,
        "framework_typed": framework_typed, "low_precision": low_precision,
        "flops": stats.number("flops"), "bytes_accessed": stats.number("bytes_accessed"),
    }


@dataclass(frozen=True)
class _FromHlo:
    op_name: np.ndarray  # int64 codes: the instruction's framework op, -1 none
    hlo_op: np.ndarray  # int64 codes: the event's HLO op, or its instruction where it names none
    low_precision: np.ndarray  # bool


def _from_hlo(hlo_ops: HloInstructions, index: TextIndex, kernel: np.ndarray, hlo: np.ndarray,
              program: np.ndarray, module: np.ndarray) -> _FromHlo:
    """Per event: what the module's HLO says of it (`HloInstructions.resolve`, one lookup per
    distinct (module, HLO op, kernel)); a library kernel named after no instruction takes its
    module's library precision."""
    texts = index.texts
    which = np.where(program >= 0, program, module)
    distinct, inverse = unique_rows(np.stack([which, hlo, kernel], axis=1))
    op_of = np.full(len(distinct), -1, np.int64)
    hlo_of = distinct[:, 1].copy()
    low_of = np.zeros(len(distinct), bool)
    for k, (which_code, hlo_code, kernel_code) in enumerate(distinct.tolist()):
        hlo_text = texts[hlo_code] if hlo_code >= 0 else ""
        found, ins = hlo_ops.resolve(texts[which_code] if which_code >= 0 else "", hlo_text,
                                     texts[kernel_code] if kernel_code >= 0 else "")
        if found is None:
            continue
        if ins is None:
            low_of[k] = 0 < found.library_float_bits <= LOW_PRECISION_BITS
            continue
        op_of[k] = index.code(ins.op_name) if ins.op_name else -1
        hlo_of[k] = index.code(ins.name)
        low_of[k] = ins.low_precision
    return _FromHlo(op_of[inverse], hlo_of[inverse], low_of[inverse])


# --------------------------------------------------------------------------------------------
# Programs: XLA module names, host dispatch, tf.function calls, collectives
#
# | what                   | producer                 | written as                            |
# |------------------------|--------------------------|---------------------------------------|
# | module of an execution | XLA on TPU (Modules line)| `jit_f(12193…)`: name(fingerprint)    |
# | host dispatch of a call| JAX (jaxlib)             | `PjitFunction(f)` for module `jit_f`  |
# | host side of a call    | XLA on GPU               | `jit_f:XLA GPU module`, launches in it|
# | a call, buffers in it  | PjRt (JAX 0.5+)          | `CommonPjRtLoadedExecutable::Execute  |
# |                        |                          | (jit_f)`, allocations nested in it    |
# | call of a tf.function  | TensorFlow 2 (eager)     | `EagerLocalExecute: __inference_f_12` |
# |                        |                          | (its number: the concrete function)   |
# | collective             | XLA (all producers)      | HLO op/category `all-reduce[-start]`, |
# |                        |                          | `all-gather`, `reduce-scatter`,       |
# |                        |                          | `all-to-all`, `collective-permute`... |
# |                        | NCCL / RCCL kernels      | `nccl…`, `rccl…` kernel names         |

_TF_FUNCTION_CALL = re.compile(r"^EagerLocalExecute: __inference_(.+)_(\d+)$")
_MODULE_FINGERPRINT = re.compile(r"\(\d+\)$")
_JAX_DISPATCH = re.compile(r"^PjitFunction\((.+)\)$")
_COLLECTIVE_HLO = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all",
                   "ragged-all-to-all", "collective-permute", "collective-broadcast")
_COLLECTIVE_KERNEL = ("nccl", "rccl")


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
