"""Canonical columns: the op, HLO op, module, kernel and device time of every analysed event.

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
op exists the op is named `<module>/<HLO op>` (`jit_f/fusion.3`: HLO op names repeat across
modules; on TPU's XLA Ops lines, and without a module, the HLO op alone) and typed by the HLO
op's kind (`fusion.3` -> `fusion`).
A `tf_op` that is no TensorFlow `name:Type` (TPU: the JAX op path with an empty type,
`jit(f)/add:`) is read as the reference reads it (`split_jax_op`): named by the path, typed
by its last component. Other TPU ops are typed by their `hlo_category` (the reference:
"Unknown"). The "kernel" of an event is its event name, except
on TPU XLA Ops lines where the metadata name is the whole HLO instruction text and the
`display_name` (or the HLO op) is used instead. `flops` and `bytes_accessed` (TPU metadata)
come along where written.

Device time on TPU: where an event carries both `device_offset_ps` and `device_duration_ps`,
the op ran on the device for `device_duration_ps` from `device_offset_ps` (counted from its
line's timestamp, as `offset_ps` is), not over its trace span: `device_offset_ps` is kept
(`NO_DEVICE_OFFSET` elsewhere) and the op analysis places the op there (analysis/ops/).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from tb_profile_plugin.xspace.hlo_modules import (
    COMMAND_BUFFER_PREFIX,
    LOW_PRECISION_BITS,
    HloInstructions,
)
from tb_profile_plugin.xspace.model import Line, Plane
from tb_profile_plugin.xspace.producers.kinds import LineKind, PlaneKind, kind_of, plane_kind
from tb_profile_plugin.xspace.producers.names import (
    BYTES_ACCESSED_STAT,
    CORRELATION_ID_STAT,
    DEVICE_DURATION_PS_STAT,
    DEVICE_OFFSET_PS_STAT,
    FLOPS_STAT,
    HLO_CATEGORY_STAT,
    HLO_MODULE_STAT,
    HLO_OP_STAT,
    JAX_OP_NAME_STAT,
    PROGRAM_ID_STAT,
    TF24_OP_STAT,
    TF_OP_STAT,
)
from tb_profile_plugin.xspace.producers.programs import module_display_name
from tb_profile_plugin.xspace.producers.text_codes import LineStats, TextIndex
from tb_profile_plugin.xspace.unique_rows import int64_rows, unique_ints, unique_rows


@dataclass(frozen=True)
class CanonicalColumns:
    """Per event (rows of the lines given to `canonical_columns`): codes into `texts`, -1 none."""

    # Text codes: int16 where the texts are fewer than 2^15, else int32 (`_code_dtype`).
    op_name: np.ndarray  # framework op (TF op name, JAX op path), else the HLO op
    op_type: np.ndarray  # TF op type, HLO category, or the HLO op's kind
    hlo_op: np.ndarray
    module: np.ndarray  # XLA module / program
    kernel: np.ndarray  # the event's own name (TPU: the HLO op, not its text)
    # int64: the device's own time for the op where some line's differs from its trace
    # duration (TPU `device_duration_ps`); None where every event's is its own duration
    # (GPU, hosts: no copy of the durations kept, 8 bytes per event; `device_duration_ps`).
    device_ps_written: np.ndarray | None
    device_offset_ps: np.ndarray  # int64: TPU: where it ran, from its line's timestamp
    flops: np.ndarray  # float64, NaN where not written
    bytes_accessed: np.ndarray  # float64, NaN where not written
    framework_typed: np.ndarray  # bool: the producer wrote "name:Type" (a TensorFlow op)
    low_precision: np.ndarray  # bool: computes in 16-bit (or narrower) floats, by its HLO
    texts: list[str]
    #: The events' own durations, made on demand (a function: not measured as the columns'
    #: bytes; they are the profile's), read where `device_ps_written` is None.
    trace_durations: Callable[[], np.ndarray] | None = None
    #: `device_duration_ps` once made from `trace_durations` (kept: measured with the rest).
    made_device_ps: list[np.ndarray] = field(default_factory=list, compare=False)

    @property
    def device_duration_ps(self) -> np.ndarray:
        """int64 per event: the device's own time for the op (its trace duration where the
        producer wrote none). Made once on first read where no line writes one: readers of
        a part read `device_ps_written` or the table's durations of their events."""
        if self.device_ps_written is not None:
            return self.device_ps_written
        if not self.made_device_ps:
            assert self.trace_durations is not None, "no device time nor durations"
            self.made_device_ps.append(self.trace_durations())
        return self.made_device_ps[0]

    @property
    def any_device_offset(self) -> bool:
        """Whether some line wrote a device offset (TPU): else `device_offset_ps` is one
        shared `NO_DEVICE_OFFSET` and reading it for every device event (a 64 MB gather
        at 8M GPU events, the 10M overview's peak) says nothing."""
        return self.device_offset_ps.strides != (0,)

    def text(self, code: int) -> str:
        return self.texts[code] if code >= 0 else ""

    def op_label(self, op_code: int, type_code: int) -> str:
        """How an op is shown: `name:Type` for a framework-typed (TF) op, else its name."""
        name = self.text(op_code)
        return f"{name}:{self.text(type_code)}" if name and type_code >= 0 else name


#: `device_offset_ps` of an event that has none (or no `device_duration_ps` beside it).
NO_DEVICE_OFFSET = np.iinfo(np.int64).min

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


#: The reference's JAX op type: lower case, with arguments in brackets (`transpose[...]`).
_JAX_OP_TYPE = re.compile(r"[a-z_][a-z0-9_]*(\[.*\])?")
_INTEGER_SUFFIX = re.compile(r"_[+-]?\d+$")


def split_jax_op(text: str) -> tuple[str, str]:
    """A `tf_op` that is no TensorFlow `name:Type`, read as the reference reads it (xprof
    2.24.2, `ParseTfOpFullname`): (name, type), type "" where it gives none.

    Split at the first `:`. Without one: (text, ""). An empty type is derived from the
    name: its last `/` component without an `_<integer>` suffix. A type of the JAX form
    (`[a-z_][a-z0-9_]*`, arguments in brackets) loses its arguments; an empty one keeps the
    derived type whatever its form; any other type names no op type (text, "").
    XLA on TPU writes the JAX op path with an empty type (`jit(f)/jvp(g)/mul:` -> `jit(f)/
    jvp(g)/mul`, type `mul`; `jit(f)/transpose[permutation=(1, 0)]:` -> type `transpose`).
    """
    name, sep, written = text.partition(":")
    if not sep:
        return text, ""
    op_type = written or _INTEGER_SUFFIX.sub("", name.rsplit("/", 1)[-1])
    if _JAX_OP_TYPE.fullmatch(op_type):
        return name, op_type.split("[", 1)[0]
    if not written:
        return name, op_type
    return text, ""


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
    # A column is made when the first line writes a value other than its default: on GPU no
    # line writes a device offset, FLOPs or bytes, and those columns stay one shared read-only
    # default (24 bytes per event less at the analyses' peak).
    out: dict[str, np.ndarray] = {}
    device_ps: dict[int, np.ndarray] = {}  # lines' device times unlike their durations
    at = 0
    for k, (plane, line) in enumerate(lines):
        n = len(line.events)
        for key, column in _line_columns(plane, line, index, hlo).items():
            if key == "device_duration_ps":
                if not np.array_equal(column, line.events.duration_ps):
                    device_ps[k] = column
                continue
            if key not in out:
                if _all_default(column, key):
                    continue
                dtype, default = _CANONICAL[key]
                out[key] = np.full(total, default, dtype)
            out[key][at : at + n] = column
        at += n
    durations = [line.events.duration_ps for _, line in lines]
    code_type = _code_dtype(len(index.texts))
    for key, (dtype, default) in _CANONICAL.items():
        if key not in out:  # no line wrote it: one read-only value, no column
            out[key] = np.broadcast_to(np.array(default, code_type if key in _TEXT_CODES
                                                else dtype), (total,))
        elif key in _TEXT_CODES and code_type != dtype:
            out[key] = out[key].astype(code_type)  # (one column's int32 at a time beside)
    return CanonicalColumns(
        out["op_name"], out["op_type"], out["hlo_op"], out["module"], out["kernel"],
        _device_times(device_ps, durations) if device_ps else None, out["device_offset_ps"],
        out["flops"], out["bytes_accessed"], out["framework_typed"], out["low_precision"],
        index.texts, functools.partial(_joined, durations),
    )


def _joined(columns: list[np.ndarray]) -> np.ndarray:
    """The lines' int64 columns end to end."""
    return np.concatenate(columns) if columns else np.zeros(0, np.int64)


def _device_times(device_ps: dict[int, np.ndarray], durations: list[np.ndarray]) -> np.ndarray:
    """Per event: its line's device time where the line writes one unlike its durations
    (`device_ps`, by line order), else its own duration."""
    out = np.empty(sum(len(d) for d in durations), np.int64)
    at = 0
    for k, duration in enumerate(durations):
        out[at : at + len(duration)] = device_ps.get(k, duration)
        at += len(duration)
    return out


#: The canonical columns: dtype (as made) and the value of an event that has none.
#: Text codes are made int32 (a profile has far fewer than 2^31 distinct texts; 20 bytes per
#: event less than int64 in columns made for every event of the table), and kept int16 where
#: the texts are fewer than 2^15 (`_code_dtype`: 10 bytes per event less again, 100 MB at
#: 10M events; readers index, compare and stack the codes, which widen as needed).
_CANONICAL: dict[str, tuple[type, object]] = {
    "op_name": (np.int32, -1), "op_type": (np.int32, -1), "hlo_op": (np.int32, -1),
    "module": (np.int32, -1), "kernel": (np.int32, -1),
    "device_offset_ps": (np.int64, NO_DEVICE_OFFSET),
    "flops": (np.float64, np.nan), "bytes_accessed": (np.float64, np.nan),
    "framework_typed": (np.bool_, False), "low_precision": (np.bool_, False),
}


#: The canonical columns that hold codes into `CanonicalColumns.texts`.
_TEXT_CODES = frozenset(("op_name", "op_type", "hlo_op", "module", "kernel"))


def _code_dtype(num_texts: int) -> type[np.signedinteger]:
    """The type the text codes are kept in: int16 where every code (and -1) fits, else
    int32."""
    return np.int16 if num_texts <= np.iinfo(np.int16).max else np.int32


def _all_default(column: np.ndarray, key: str) -> bool:
    """Whether a line's `column` holds only the default of canonical column `key` (NaN
    defaults compare by being NaN)."""
    default = _CANONICAL[key][1]
    if isinstance(default, float) and np.isnan(default):
        return bool(np.isnan(column).all())
    return bool((column == default).all())


def _host_line_columns(plane: Plane, line: Line, index: TextIndex) -> dict[str, np.ndarray]:
    """Host threads: only XLA's CPU thunks (`hlo_op`) are ops here; the other columns keep
    their defaults (`_CANONICAL`: only the columns that differ are returned)."""
    out = {"device_duration_ps": line.events.duration_ps}
    if plane.stat_metadata.id_of(HLO_OP_STAT) is None:
        return out
    stats = LineStats(plane, line)
    hlo = stats.text(HLO_OP_STAT, index)
    if not np.any(hlo >= 0):
        return out
    module = stats.text(HLO_MODULE_STAT, index)
    out.update(op_name=hlo, op_type=_hlo_kinds(hlo, index), hlo_op=hlo,
               module=np.where(module >= 0, module, stats.text(PROGRAM_ID_STAT, index)))
    return out


def _path_leaves(op_name: np.ndarray, index: TextIndex) -> np.ndarray:
    """Per event: the code of its op path's last component (`jit(f)/jvp()/dot_general` ->
    `dot_general`)."""
    present = unique_ints(op_name)[0]
    texts = index.texts
    leaves = np.full(len(texts) + 1, -1, np.int64)
    for code in present.tolist():  # distinct op names, not events
        leaves[code] = index.code(texts[code].rsplit("/", 1)[-1])
    return leaves[op_name]


def _hlo_kinds(hlo: np.ndarray, index: TextIndex) -> np.ndarray:
    """Per event: the code of its HLO op's kind (`hlo_kind`), -1 where it has no HLO op."""
    present = unique_ints(hlo[hlo >= 0])[0]
    texts = index.texts
    kinds = np.full(len(texts) + 1, -1, np.int64)
    for code in present.tolist():  # distinct HLO ops, not events
        kinds[code] = index.code(hlo_kind(texts[code]))
    return kinds[hlo]


def _module_hlo_ops(module: np.ndarray, hlo: np.ndarray, index: TextIndex) -> np.ndarray:
    """Per event: the code of `<module>/<HLO op>` (`jit_subtract/loop_convert_fusion`), the
    op of a kernel no framework op names; its HLO op alone where it names no module, -1
    where it has no HLO op. HLO op names repeat across modules: keyed by the HLO op alone,
    two jitted functions' `loop_convert_fusion` kernels would be one op."""
    out = hlo.astype(np.int64, copy=True)
    both = np.flatnonzero((hlo >= 0) & (module >= 0))
    if len(both) == 0:
        return out
    texts = index.texts
    pairs, inverse = unique_rows(int64_rows(module[both], hlo[both]))
    codes = np.array([index.code(f"{texts[m]}/{texts[h]}")  # distinct (module, HLO op)
                      for m, h in pairs.tolist()], np.int64)
    out[both] = codes[inverse.ravel()]
    return out


def _line_columns(plane: Plane, line: Line, index: TextIndex,
                  hlo_ops: HloInstructions | None = None) -> dict[str, np.ndarray]:
    if plane_kind(plane.name) == PlaneKind.HOST:
        return _host_line_columns(plane, line, index)
    stats = LineStats(plane, line)
    xla_line = kind_of(plane, line) == LineKind.XLA_OPS
    # Framework op: TF >= 2.5 / TPU metadata `tf_op`, TF <= 2.4 `level 0`.
    framework = stats.text(TF_OP_STAT, index)
    older = stats.text(TF24_OP_STAT, index)
    framework = np.where(framework >= 0, framework, older)
    texts = index.texts
    op_name = np.full(stats.n, -1, np.int64)
    op_type = np.full(stats.n, -1, np.int64)
    jax_type = np.full(stats.n, -1, np.int64)
    present = unique_ints(framework[framework >= 0])[0]
    if len(present):  # one parse per distinct text, not per event
        name_of = np.full(len(texts) + 1, -1, np.int64)
        type_of = np.full(len(texts) + 1, -1, np.int64)
        jax_type_of = np.full(len(texts) + 1, -1, np.int64)
        for code in present.tolist():
            name, op_t = split_framework_op(texts[code])
            if name and not op_t:  # a JAX op path (TPU: `jit(f)/add:`), as the reference
                name, jax_t = split_jax_op(texts[code])
                jax_type_of[code] = index.code(jax_t) if jax_t else -1
            name_of[code] = index.code(name) if name else -1
            type_of[code] = index.code(op_t) if op_t else -1
        op_name = name_of[framework]
        op_type = type_of[framework]
        jax_type = jax_type_of[framework]
    framework_typed = op_type >= 0
    op_type = np.where(framework_typed, op_type, jax_type)
    jax_name = stats.text(JAX_OP_NAME_STAT, index)
    hlo = stats.text(HLO_OP_STAT, index)
    kernel = stats.metadata_names(index, display=xla_line)
    if xla_line:
        hlo = np.where(hlo >= 0, hlo, kernel)
    module = stats.text(HLO_MODULE_STAT, index)
    program = stats.text(PROGRAM_ID_STAT, index)
    low_precision = np.zeros(stats.n, bool)
    if hlo_ops is not None and len(hlo_ops):
        from_hlo = _from_hlo(hlo_ops, index, kernel, hlo, program, module)
        _add_graph_instructions(from_hlo, hlo_ops, index, stats, line, kernel, hlo, program,
                                module)
        # The instruction's own op wins over `name`, which may hold only its scope
        # (`jit(f)` for a fusion XLA made of `jit(f)/tanh`), as the reference reads it.
        jax_name = np.where(from_hlo.op_name >= 0, from_hlo.op_name, jax_name)
        hlo = from_hlo.hlo_op
        low_precision = from_hlo.low_precision
    op_name = np.where(op_name >= 0, op_name, jax_name)
    op_type = np.where(op_type >= 0, op_type, stats.text(HLO_CATEGORY_STAT, index))
    untyped = (op_type < 0) & (op_name >= 0)
    if untyped.any():  # a JAX op path is typed by its last component, as the reference does
        op_type[untyped] = _path_leaves(op_name[untyped], index)
    # TPU ops name their program by id only (`program_id`, often negative): the module is
    # the name its executions carry on the plane's "XLA Modules" line; an id no execution
    # names is no module shown (never the bare id).
    module = np.where(module >= 0, module,
                      _program_modules(plane, line, program, index) if xla_line else program)
    op_name = np.where(op_name >= 0, op_name,
                       hlo if xla_line else _module_hlo_ops(module, hlo, index))
    missing = (op_type < 0) & (hlo >= 0)
    if missing.any():
        op_type[missing] = _hlo_kinds(hlo[missing], index)
    device_ps = stats.number(DEVICE_DURATION_PS_STAT)
    duration = line.events.duration_ps
    device_duration = np.where(np.isnan(device_ps), duration,
                               np.nan_to_num(device_ps)).astype(np.int64)
    offset_ps = stats.number(DEVICE_OFFSET_PS_STAT) if xla_line else device_ps[:0]
    placed = ~np.isnan(offset_ps) & ~np.isnan(device_ps) if len(offset_ps) else None
    return {
        "op_name": op_name, "op_type": op_type, "hlo_op": hlo, "module": module,
        "kernel": kernel, "device_duration_ps": device_duration,
        **({"device_offset_ps": np.where(placed, np.nan_to_num(offset_ps).astype(np.int64),
                                         NO_DEVICE_OFFSET)}
           if placed is not None and placed.any() else {}),
        "framework_typed": framework_typed, "low_precision": low_precision,
        "flops": stats.number(FLOPS_STAT), "bytes_accessed": stats.number(BYTES_ACCESSED_STAT),
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
    distinct, inverse = unique_rows(int64_rows(which, hlo, kernel))
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



def _replays(rows: np.ndarray, which: np.ndarray, hlo: np.ndarray, correlation: np.ndarray,
             start_ps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`rows` grouped by replay (module, buffer, correlation id), in start order within one,
    and the first of each replay. A stream runs one replay's kernels one after another: where
    the rows are in start order and each replay is one run of them, they stay as they are (no
    sort of the rows: the runs' keys alone are checked distinct); else by a stable sort of
    the replays' ranks, or by rank and start. Which replay comes first does not matter: each
    is paired on its own kernels (`_add_graph_instructions`)."""
    start = start_ps[rows]
    in_order = bool(np.all(start[1:] >= start[:-1]))
    keys = (which[rows], hlo[rows], correlation[rows])
    if in_order:
        change = np.zeros(len(rows), bool)
        change[0] = True
        for column in keys:
            change[1:] |= column[1:] != column[:-1]
        first = np.flatnonzero(change)
        if len(unique_rows(int64_rows(*(column[first] for column in keys)))[0]) == len(first):
            return rows, first
    _, replay_key = unique_rows(int64_rows(*keys))
    order = (np.argsort(replay_key, kind="stable") if in_order
             else np.lexsort((start, replay_key)))
    rows, replay_key = rows[order], replay_key[order]
    return rows, np.flatnonzero(np.r_[True, replay_key[1:] != replay_key[:-1]])


def _add_graph_instructions(from_hlo: _FromHlo, hlo_ops: HloInstructions, index: TextIndex,
                            stats: LineStats, line: Line, kernel: np.ndarray, hlo: np.ndarray,
                            program: np.ndarray, module: np.ndarray) -> None:
    """Into `from_hlo`: the instruction of each kernel replayed inside a CUDA graph (`hlo_op`
    = `command_buffer_N`) at its place in its module's schedule, where the replay pairs with
    the schedule (`HloInstructions.instructions_in_graph`): a cuBLAS kernel's custom-call, and
    a fusion kernel's own fusion, not the fusion its name names (XLA compiles one kernel for
    identical fusions and names it after the first). Where a replay does not pair, its
    kernels keep what their names resolve to (`_from_hlo`). One replay: the kernels of one
    graph launch (one `correlation_id`) on this line, in the order they started; replays that
    ran the same kernels are paired once, and every event is written in one numpy pass."""
    texts = index.texts
    buffers = [code for code in unique_ints(hlo[hlo >= 0])[0].tolist()
               if texts[code].startswith(COMMAND_BUFFER_PREFIX)]
    if not buffers:
        return
    which = np.where(program >= 0, program, module)
    correlation = stats.number(CORRELATION_ID_STAT)
    rows = np.flatnonzero(np.isin(hlo, buffers) & (which >= 0) & ~np.isnan(correlation))
    if len(rows) == 0:
        return
    rows, first = _replays(rows, which, hlo, correlation.astype(np.int64),
                           line.events.start_ps)
    length = np.diff(np.r_[first, len(rows)])
    replay = np.repeat(np.arange(len(first)), length)  # of each row
    place = np.arange(len(rows)) - first[replay]  # its place in its replay
    # Replays that ran the same kernels are paired once: grouped by module, length and two
    # hashes of their kernels (numpy over the rows), each member then checked equal to its
    # group's first replay, kernel by kernel; a replay that is not (a collision) is its own.
    codes = kernel[rows].astype(np.int64) + 2
    with np.errstate(over="ignore"):
        hashes = [np.add.reduceat(codes * w[place], first)
                  for w in _place_weights(int(length.max()))]
    signature = np.stack([which[rows[first]], length, *hashes], axis=1)
    _, leader, group = np.unique(signature, axis=0, return_index=True, return_inverse=True)
    by_first = np.argsort(leader)  # groups in the order their first replay comes
    rank = np.empty_like(by_first)
    rank[by_first] = np.arange(len(by_first))
    leader, group = leader[by_first], rank[group.ravel()]
    same = codes == codes[first[leader[group]][replay] + place]
    if not same.all():
        group = group.copy()
        differs = np.unique(replay[~same])
        group[differs] = np.arange(len(leader), len(leader) + len(differs))
        leader = np.r_[leader, differs]
    # Per group, the pairing of its first replay: per place, the instruction's codes.
    offset = np.r_[0, np.cumsum(length[leader])]
    op_at = np.full(offset[-1], -2, np.int64)  # -2: the place keeps its own resolution
    name_at = np.full(offset[-1], -1, np.int64)
    low_at = np.zeros(offset[-1], bool)
    for g, r in enumerate(leader.tolist()):  # one pairing per distinct replay
        members = rows[first[r]:first[r] + length[r]]
        found = hlo_ops.instructions_in_graph(
            texts[int(which[members[0]])], [texts[k] if k >= 0 else "" for k in
                                            kernel[members].tolist()])
        places = [k for k, ins in enumerate(found) if ins is not None]
        instructions = [ins for ins in found if ins is not None]
        at = offset[g] + np.array(places, np.int64)
        op_at[at] = [index.code(ins.op_name) if ins.op_name else -1 for ins in instructions]
        name_at[at] = [index.code(ins.name) for ins in instructions]
        low_at[at] = [ins.low_precision for ins in instructions]
    at = offset[group[replay]] + place
    paired = op_at[at] != -2
    events, at = rows[paired], at[paired]
    from_hlo.op_name[events] = op_at[at]
    from_hlo.hlo_op[events] = name_at[at]
    from_hlo.low_precision[events] = low_at[at]


def _place_weights(places: int) -> tuple[np.ndarray, np.ndarray]:
    """Two odd int64 weights per place in a replay, for hashes of its kernels (a multiplicative
    hash of the place: any two replays a hash merges are told apart by the check of every
    kernel, so its quality moves only the time)."""
    place = np.arange(1, places + 1, dtype=np.uint64)
    with np.errstate(over="ignore"):
        first = place * np.uint64(0x9E3779B97F4A7C15)
        second = (first ^ (first >> np.uint64(29))) * np.uint64(0xBF58476D1CE4E5B9)
    return (first | np.uint64(1)).view(np.int64), (second | np.uint64(1)).view(np.int64)


_MODULE_WITH_ID = re.compile(r"^(.*)\((-?\d+)\)$")


def _program_modules(plane: Plane, line: Line, program: np.ndarray,
                     index: TextIndex) -> np.ndarray:
    """Per event of an XLA Ops line: the code of its module's name (`jit_f`), from its
    `program_id` (codes in `program`), -1 where no execution names it. An execution on the
    plane's "XLA Modules" line is named `jit_f(<program id>)` (the id as uint64, where the op's
    stat may hold it as int64); an id named by no execution takes the module whose execution
    holds the program's first op. One lookup per distinct program or name, not per event."""
    present = unique_ints(program[program >= 0])[0]
    out = np.full(len(program), -1, np.int64)
    modules = [m for m in plane.lines if kind_of(plane, m) == LineKind.XLA_MODULES
               and len(m.events)]
    if not len(present) or not modules:
        return out
    meta = plane.event_metadata
    by_id: dict[int, str] = {}
    spans: list[tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]] = []
    for m in modules:
        rows, which = np.unique(meta.rows_of(m.events.metadata_id), return_inverse=True)
        names = [meta.names[int(r)] if r >= 0 else "" for r in rows.tolist()]
        for name in names:
            found = _MODULE_WITH_ID.match(name)
            if found:
                by_id.setdefault(int(found.group(2)) % 2**64, module_display_name(name))
        order = np.argsort(m.events.start_ps, kind="stable")
        spans.append((m.events.start_ps[order],
                      (m.events.start_ps + m.events.duration_ps)[order],
                      which.ravel()[order], [module_display_name(n) for n in names]))
    texts = index.texts
    for code in present.tolist():
        text = texts[code]
        found_name = by_id.get(int(text) % 2**64) if text.lstrip("-").isdigit() else None
        events = program == code
        if found_name is None:  # the module whose execution holds the program's first op
            first = int(line.events.start_ps[events].min())
            for begin, end, which, shown in spans:
                k = int(np.searchsorted(begin, first, side="right")) - 1
                if k >= 0 and first < int(end[k]):
                    found_name = shown[int(which[k])]
                    break
        if found_name:
            out[events] = index.code(found_name)
    return out
