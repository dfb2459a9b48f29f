"""What XLA compiled: the HLO instructions behind device kernels, from the profile's own HloProtos.

JAX and XLA write one serialized HloProto per compiled module into the `/host:metadata` plane
(event metadata named `jit_f(<program id>)`, stat "Hlo Proto"). A kernel event names its module
(`hlo_module`, `program_id`) and usually its framework op (`name` = the JAX op path) and HLO op
(`hlo_op`). Not always: kernels that XLA replays inside a CUDA graph ("command buffer", JAX 0.5
and later on NVIDIA GPUs) all carry `hlo_op` = `command_buffer_<N>` and no `name`, so neither
the op nor its precision can be read from the event. The kernel's own name still names an
instruction: XLA names a fusion's kernel after the instruction, dots made underscores
(`gemm_fusion_dot.34` -> kernel `gemm_fusion_dot_34`), but one kernel serves identical
fusions under the first one's name; where it ran in the graph says which (below).

`HloInstructions.of(profile)` reads every module once (only the fields in protos/
hlo_summary.proto) and answers, for (program id or module name, kernel name): the instruction,
its framework op (OpMetadata.op_name) and the precision it computes in: the narrowest float
among its operands and its result (a bf16 x bf16 -> f32 matrix product runs at bf16 on the
Tensor Cores). Library kernels (cuBLAS `nvjet_*`, cuDNN `sm90_xmma_*`) have no instruction of
their name; within a module whose library calls (custom-calls) all compute in one precision,
they take that one.

Inside a CUDA graph a kernel's instruction is found by where it ran
(`HloInstructions.instructions_in_graph`; `library_calls_in_graph`: the cuBLAS ones alone):
XLA records the graph's commands in the order of the module's schedule
(`HloModuleProto.schedule`), one per instruction that launches work, and replays them in that
order. So one replay's kernels, in the order they ran and memsets aside, pair one to one with
the entry computation's fusions and cuBLAS custom-calls in schedule order, and each kernel
ran for its place's instruction: a cuBLAS kernel for its custom-call, a fusion kernel for its
own fusion, which is not always the one its name names (XLA compiles one kernel for identical
fusions and names it after the first: the six layers of a stack run `gemm_fusion_dot_276` for
`gemm_fusion_dot.276`, `.278`, ...; on jax_nvidia_device_bound 213 of each replay's 268
fusion kernels). The pairing is taken only when it is exact: as many kernels as launching
instructions, each fusion's place holding a kernel named after it or after a fusion of the
same fused computation, each custom-call's place a kernel named after no instruction, and no
instruction in the schedule whose kernels cannot be counted (a copy, a loop, another
library's call). Otherwise no kernel of the replay takes a place: its kernels keep what
`resolve` gives (the fusion they are named after; nothing for a library kernel). On the
committed H200 captures every replay pairs (jax_nvidia_train: 49 kernels, 6 of them cuBLAS,
per replay; jax_nvidia_device_bound: 298 and 30), and the graph's node ids confirm it: each
fusion kernel's `cuda_graph_node_id` is its place in the schedule, the cuBLAS kernels' nodes
come after them in their custom-calls' order.

| XLA PrimitiveType (number)                                  | float bits |
|-------------------------------------------------------------|------------|
| F16 (10), BF16 (16)                                         | 16         |
| F32 (11), F64 (12)                                          | 32, 64     |
| F8E5M2 (19), F8E4M3FN (20), F8E4M3B11FNUZ (23), F8E5M2FNUZ  | 8          |
| (24), F8E4M3FNUZ (25), F8E4M3 (28), F8E3M4 (29), F8E8M0FNU  |            |
| (31); F4E2M1FN (30)                                         | 4          |
| integers, PRED, tuples, tokens                              | not floats |
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

from google.protobuf.message import DecodeError

from tb_profile_plugin.xspace.model import Profile, result_nbytes
from tb_profile_plugin.xspace.pb import hlo_summary_pb2
from tb_profile_plugin.xspace.schema import METADATA_PLANE_NAME, StatKind

HLO_PROTO_STAT = "Hlo Proto"
#: XLA's HLO op on every kernel it replays inside a CUDA graph: names no instruction.
COMMAND_BUFFER_PREFIX = "command_buffer"
TUPLE = 13
FLOAT_BITS = {10: 16, 16: 16, 11: 32, 12: 64, 19: 8, 20: 8, 23: 8, 24: 8, 25: 8, 28: 8, 29: 8,
              31: 8, 30: 4}
#: At most this many float bits is the "16-bit" precision class users see.
LOW_PRECISION_BITS = 16
#: The custom-call targets of XLA's cuBLAS matrix products (`__cublas$gemm`,
#: `__cublas$lt$matmul`, `__cublas$lt$matmul$f8`).
CUBLAS_GEMM_PREFIXES = ("__cublas$gemm", "__cublas$lt$matmul")
#: Entry-computation instructions that launch nothing on the device.
_NO_LAUNCH = frozenset({"parameter", "get-tuple-element", "tuple", "constant", "bitcast"})
#: Memsets (CUPTI names them `Memset`) a library call may run before its kernel.
MEMSET_PREFIX = "Memset"


@dataclass(frozen=True)
class Instruction:
    name: str  # the HLO instruction (`gemm_fusion_dot.34`)
    op_name: str  # its framework op: the JAX op path or TF op name; "" when XLA made it
    float_bits: int  # the narrowest float among its operands and result; 0: no float

    @property
    def low_precision(self) -> bool:
        return 0 < self.float_bits <= LOW_PRECISION_BITS


@dataclass(frozen=True)
class Launch:
    """One instruction of the entry computation's schedule that launches one kernel."""
    kernel: str  # a fusion's own kernel name (dots made underscores); "" for a cuBLAS call
    fused: Hashable  # a fusion's fused computation, as compared (`_fused_shape`); None else
    library: Instruction | None  # the cuBLAS custom-call; None for a fusion
    instruction: Instruction  # the instruction itself: the fusion or the cuBLAS custom-call


@dataclass(frozen=True)
class Module:
    name: str  # `jit_train_step`
    program_id: int  # -1 when the metadata name carries none
    by_kernel: dict[str, Instruction]  # kernel name (dots made underscores) -> instruction
    library_float_bits: int  # the one precision of all its custom-calls, else 0
    # The entry computation's launching instructions in schedule order; empty when the module
    # has no schedule or runs an instruction whose kernels cannot be counted.
    launches: tuple[Launch, ...] = ()
    fused: dict[str, Hashable] | None = None  # fusion kernel name -> its fused computation


class HloInstructions:
    """The profile's compiled modules, by program id and by (unique) module name."""

    def __init__(self, modules: list[Module]) -> None:
        self._by_program = {m.program_id: m for m in modules if m.program_id >= 0}
        names: dict[str, list[Module]] = {}
        for m in modules:
            names.setdefault(m.name, []).append(m)
        self._by_name = {n: ms[0] for n, ms in names.items() if len(ms) == 1}

    def __len__(self) -> int:
        return len(self._by_program) + len(self._by_name)

    @functools.cached_property
    def fixed_nbytes(self) -> int:
        """What it holds, measured once: it never changes after it is built, and walking its
        modules' instructions and launches on every measure of the profile cost ~40 ms per
        request on a 3,300-event H200 capture (`model.result_nbytes` reads this)."""
        return result_nbytes((self._by_program, self._by_name))

    def module(self, module_or_program: str) -> Module | None:
        """The module an event names by `program_id` (decimal) or `hlo_module`."""
        if module_or_program.isdigit():
            return self._by_program.get(int(module_or_program))
        return self._by_name.get(module_or_program)

    def resolve(self, module_or_program: str, hlo_op: str, kernel: str
                ) -> tuple[Module | None, Instruction | None]:
        """The module an event names, and the instruction it ran for: its `hlo_op` when that
        names one (not a command buffer), else the one its kernel is named after."""
        module = self.module(module_or_program) if module_or_program else None
        if module is None:
            return None, None
        names_op = bool(hlo_op) and not hlo_op.startswith(COMMAND_BUFFER_PREFIX)
        key = hlo_op if names_op else kernel
        return module, module.by_kernel.get(key.replace(".", "_"))

    def library_calls_in_graph(self, module_or_program: str, kernels: Sequence[str]
                               ) -> list[Instruction | None]:
        """One replay of a module's CUDA graph, its kernels' names in the order they ran:
        per kernel, the cuBLAS custom-call it ran for; None for every other kernel, and for
        all of them when the replay does not pair one to one with the module's schedule (the
        module docstring says when it does)."""
        paired = self._pair(module_or_program, kernels)
        out: list[Instruction | None] = [None] * len(kernels)
        for k, launch in paired:
            out[k] = launch.library
        return out

    def instructions_in_graph(self, module_or_program: str, kernels: Sequence[str]
                              ) -> list[Instruction | None]:
        """One replay of a module's CUDA graph, its kernels' names in the order they ran:
        per kernel, the instruction at its place in the module's schedule (a fusion, or the
        cuBLAS custom-call), not the one its name names (a kernel XLA compiled once for
        identical fusions is named after the first: `loop_transpose_fusion_1` runs for
        `loop_transpose_fusion`); None for memsets, and for all of them when the replay does
        not pair one to one with the schedule."""
        out: list[Instruction | None] = [None] * len(kernels)
        for k, launch in self._pair(module_or_program, kernels):
            out[k] = launch.instruction
        return out

    def _pair(self, module_or_program: str, kernels: Sequence[str]) -> list[tuple[int, Launch]]:
        """(place among `kernels`, its launch) for every kernel but memsets, when the replay
        pairs exactly with its module's schedule (module docstring); else nothing."""
        module = self.module(module_or_program) if module_or_program else None
        if module is None or not module.launches:
            return []
        ran = [k for k, name in enumerate(kernels) if not name.startswith(MEMSET_PREFIX)]
        if len(ran) != len(module.launches):
            return []
        fused = module.fused or {}
        for k, launch in zip(ran, module.launches, strict=True):
            name = kernels[k].replace(".", "_")
            if launch.library is not None:
                if name in module.by_kernel:  # a kernel XLA made where cuBLAS should run
                    return []
            elif name != launch.kernel and (name not in fused or fused[name] != launch.fused):
                return []
        return list(zip(ran, module.launches, strict=True))

    @staticmethod
    def of(profile: Profile) -> HloInstructions:
        """Every module of the profile's metadata plane; a proto that does not parse is
        skipped (the kernels of that module keep what their events say)."""
        plane = profile.plane(METADATA_PLANE_NAME)
        if plane is None:
            return HloInstructions([])
        stat_id = plane.stat_metadata.id_of(HLO_PROTO_STAT)
        if stat_id is None:
            return HloInstructions([])
        meta = plane.event_metadata
        stats = meta.stats.select(stat_id, len(meta.ids))
        modules = []
        for k in range(len(stats)):
            if int(stats.kind[k]) != StatKind.BYTES:
                continue
            data = stats.python_value(k)
            assert isinstance(data, bytes)
            module = _read_module(data, meta.names[int(stats.row[k])])
            if module is not None:
                modules.append(module)
        return HloInstructions(modules)


def _read_module(data: bytes, metadata_name: str) -> Module | None:
    try:
        proto = hlo_summary_pb2.HloProto.FromString(data).hlo_module
    except (DecodeError, ValueError):
        return None
    program_id = -1
    name, _, rest = metadata_name.partition("(")
    if rest.endswith(")") and rest[:-1].isdigit():
        program_id = int(rest[:-1])
    kept = [ins for c in proto.computations if not c.is_fusion_computation  # fused ones run
            for ins in c.instructions]  # inside their fusion's kernel
    bits_of_id = {ins.id: _float_bits(ins.shape) for ins in kept}
    by_kernel: dict[str, Instruction] = {}
    library_bits: set[int] = set()
    for ins in kept:
        floats = [b for b in [bits_of_id[ins.id]] + [bits_of_id.get(o, 0) for o in ins.operand_ids]
                  if b]
        bits = min(floats) if floats else 0
        by_kernel[ins.name.replace(".", "_")] = Instruction(ins.name, ins.metadata.op_name, bits)
        if ins.opcode == "custom-call" and ins.custom_call_target:
            library_bits.add(bits)
    library = library_bits.pop() if len(library_bits) == 1 else 0
    launches, fused = _launches(proto, by_kernel)
    return Module(proto.name or name, program_id, by_kernel, library, launches, fused)


def _launches(proto: hlo_summary_pb2.HloModuleProto, by_kernel: dict[str, Instruction]
              ) -> tuple[tuple[Launch, ...], dict[str, Hashable] | None]:
    """The entry computation's launching instructions in schedule order, and each of its
    fusions' fused computation by kernel name; nothing when the module has no schedule or its
    entry computation runs an instruction other than fusions and cuBLAS calls."""
    entry = next((c for c in proto.computations if c.name == proto.entry_computation_name), None)
    if entry is None or entry.id not in proto.schedule.sequences:
        return (), None
    computations = {c.id: c for c in proto.computations}
    instructions = {ins.id: ins for ins in entry.instructions}
    launches: list[Launch] = []
    fused: dict[str, Hashable] = {}
    # Identical fusions (a stack's layers) share one shape object: kept once, and sized
    # once (`fixed_nbytes` walks each object once: jax_nvidia_device_bound 48 -> 40 ms).
    shapes: dict[Hashable, Hashable] = {}
    for ins_id in proto.schedule.sequences[entry.id].instruction_ids:
        ins = instructions.get(ins_id)
        if ins is None:
            return (), None
        if ins.opcode in _NO_LAUNCH:
            continue
        kernel = ins.name.replace(".", "_")
        if ins.opcode == "fusion":
            shape = _fused_shape(ins, computations)
            shape = shapes.setdefault(shape, shape)
            fused[kernel] = shape
            launches.append(Launch(kernel, shape, None, by_kernel[kernel]))
        elif ins.opcode == "custom-call" and ins.custom_call_target.startswith(
                CUBLAS_GEMM_PREFIXES):
            launches.append(Launch("", None, by_kernel[kernel], by_kernel[kernel]))
        else:
            return (), None
    return tuple(launches), fused


def _fused_shape(ins: hlo_summary_pb2.HloInstructionProto,
                 computations: dict[int, hlo_summary_pb2.HloComputationProto]) -> Hashable:
    """What two fusions XLA gives one kernel have alike: their kind, result and fused
    computation (each instruction's opcode, result and operands' places, nested fusions alike);
    not their names."""
    body: list[Hashable] = [ins.fusion_kind, _shape_key(ins.shape)]
    for called in ins.called_computation_ids:
        computation = computations.get(called)
        if computation is None:
            return None
        place = {f.id: k for k, f in enumerate(computation.instructions)}
        body.append(tuple(
            (f.opcode, _shape_key(f.shape), tuple(place.get(o, -1) for o in f.operand_ids),
             f.custom_call_target, _fused_shape(f, computations) if f.opcode == "fusion" else ())
            for f in computation.instructions))
    return tuple(body)


def _shape_key(shape: hlo_summary_pb2.ShapeProto) -> Hashable:
    return (shape.element_type, tuple(shape.dimensions),
            tuple(_shape_key(t) for t in shape.tuple_shapes))


def _float_bits(shape: hlo_summary_pb2.ShapeProto) -> int:
    """Float width of a result shape (a tuple: its first element); 0 when not a float."""
    element_type = shape.element_type
    if element_type == TUPLE and shape.tuple_shapes:
        element_type = shape.tuple_shapes[0].element_type
    return FLOAT_BITS.get(element_type, 0)


_RESULT_NAME = "xspace.hlo_modules.HloInstructions"
_read_lock = threading.Lock()


def hlo_instructions(profile: Profile) -> HloInstructions:
    """`HloInstructions.of(profile)`, read once per decoded profile and kept with it
    (`Profile.derived`, counted in the store's bound): the analyses' canonical columns and the
    trace's details share it, and the analyses' scratch release does not drop it."""
    with _read_lock:
        found = profile.derived.results.get(_RESULT_NAME)
        if not isinstance(found, HloInstructions):
            found = HloInstructions.of(profile)
            if len(found):  # none (no metadata plane, no Hlo Proto) is found again cheaply
                profile.derived.add(_RESULT_NAME, found)
        return found
