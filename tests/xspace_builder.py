"""Synthetic XSpaces in a few lines, for exact-number unit tests and GPU planes.

    b = XSpaceBuilder(hostnames=["worker0"])
    cpu = b.plane("/host:CPU")
    t = cpu.line("tf_Compute", line_id=7, timestamp_ns=1_000)
    t.event("train", offset_ps=0, duration_ps=10_000_000, step_num=1, _r=1)
    gpu = b.gpu_plane(0)
    s = gpu.line("Stream #12(Compute)", line_id=12)
    s.kernel("volta_sgemm_128x64_nn", offset_ps=2_000, duration_ps=5_000, correlation_id=7,
             tf_op="dense/MatMul:MatMul", group_id=1)
    data = b.serialize()          # bytes of an .xplane.pb

Stats are given as keyword arguments: ints become int64 (uint64 with `uint=`), floats doubles,
str str_value, bytes bytes_value, `Ref("name")` a ref_value to an interned stat name.
GPU kernels carry `kernel_details` and memcpys `memcpy_details` in the text form TensorFlow's
CUPTI tracer writes (xprof_reference.md §3.1, §3.5 "Kernel stats").
"""

from __future__ import annotations

from dataclasses import dataclass

from tb_profile_plugin.xspace.pb import xplane_pb2


@dataclass(frozen=True)
class Ref:
    """A stat value interned as a stat metadata name (XStat.ref_value)."""

    name: str


@dataclass(frozen=True)
class Uint:
    """An unsigned stat value (XStat.uint64_value)."""

    value: int


def kernel_details(
    registers_per_thread: int = 32,
    static_shared_bytes: int = 0,
    dynamic_shared_bytes: int = 0,
    grid: tuple[int, int, int] = (1, 1, 1),
    block: tuple[int, int, int] = (128, 1, 1),
    occupancy_percent: float = 50.0,
) -> str:
    return (
        f"regs:{registers_per_thread} static_shared:{static_shared_bytes} "
        f"dynamic_shared:{dynamic_shared_bytes} grid:{','.join(map(str, grid))} "
        f"block:{','.join(map(str, block))} occ_pct:{occupancy_percent}"
    )


class LineBuilder:
    def __init__(self, plane: PlaneBuilder, line: xplane_pb2.XLine) -> None:
        self._plane = plane
        self._line = line

    def event(
        self,
        name: str,
        /,
        offset_ps: int = 0,
        duration_ps: int = 0,
        display_name: str = "",
        num_occurrences: int | None = None,
        **stats: object,
    ) -> xplane_pb2.XEvent:
        event = self._line.events.add()
        event.metadata_id = self._plane.event_metadata_id(name, display_name)
        if num_occurrences is not None:
            event.num_occurrences = num_occurrences
        else:
            event.offset_ps = offset_ps
        event.duration_ps = duration_ps
        for key, value in stats.items():
            self._plane.set_stat(event.stats.add(), key, value)
        return event

    def kernel(
        self,
        name: str,
        /,
        offset_ps: int,
        duration_ps: int,
        correlation_id: int,
        details: str | None = None,
        **stats: object,
    ) -> xplane_pb2.XEvent:
        return self.event(
            name,
            offset_ps,
            duration_ps,
            correlation_id=Uint(correlation_id),
            kernel_details=details if details is not None else kernel_details(),
            **stats,
        )

    def memcpy(
        self,
        kind: str,
        offset_ps: int,
        duration_ps: int,
        correlation_id: int,
        num_bytes: int,
        **stats: object,
    ) -> xplane_pb2.XEvent:
        """kind: HtoD, DtoH, DtoD or HtoH; the event is named MEMCPY<kind> as CUPTI names it."""
        return self.event(
            f"Memcpy{kind}",
            offset_ps,
            duration_ps,
            correlation_id=Uint(correlation_id),
            memcpy_details=f"kind_src:{kind[:1]} kind_dst:{kind[-1]} num_bytes:{num_bytes}",
            **stats,
        )


class PlaneBuilder:
    def __init__(self, plane: xplane_pb2.XPlane) -> None:
        self._plane = plane
        self._event_ids: dict[str, int] = {}
        self._stat_ids: dict[str, int] = {}

    def line(
        self,
        name: str,
        line_id: int | None = None,
        timestamp_ns: int = 0,
        display_name: str = "",
        duration_ps: int = 0,
    ) -> LineBuilder:
        line = self._plane.lines.add()
        line.id = line_id if line_id is not None else len(self._plane.lines)
        line.display_id = line.id
        line.name = name
        line.display_name = display_name
        line.timestamp_ns = timestamp_ns
        line.duration_ps = duration_ps
        return LineBuilder(self, line)

    def event_metadata_id(self, name: str, display_name: str = "") -> int:
        if name not in self._event_ids:
            new_id = len(self._event_ids) + 1
            self._event_ids[name] = new_id
            meta = self._plane.event_metadata[new_id]
            meta.id = new_id
            meta.name = name
            meta.display_name = display_name
        return self._event_ids[name]

    def stat_metadata_id(self, name: str) -> int:
        if name not in self._stat_ids:
            new_id = len(self._stat_ids) + 1
            self._stat_ids[name] = new_id
            meta = self._plane.stat_metadata[new_id]
            meta.id = new_id
            meta.name = name
        return self._stat_ids[name]

    def set_stat(self, stat: xplane_pb2.XStat, name: str, value: object) -> None:
        stat.metadata_id = self.stat_metadata_id(name)
        if isinstance(value, Ref):
            stat.ref_value = self.stat_metadata_id(value.name)
        elif isinstance(value, Uint):
            stat.uint64_value = value.value
        elif isinstance(value, bool | int):
            stat.int64_value = int(value)
        elif isinstance(value, float):
            stat.double_value = value
        elif isinstance(value, str):
            stat.str_value = value
        elif isinstance(value, bytes):
            stat.bytes_value = value
        else:
            raise TypeError(f"unsupported stat value {value!r}")

    def plane_stat(self, name: str, value: object) -> None:
        self.set_stat(self._plane.stats.add(), name, value)

    def metadata_stats(self, event_name: str, display_name: str = "", **stats: object) -> None:
        """Stats on an event's XEventMetadata (XLA on TPU writes op facts there)."""
        meta = self._plane.event_metadata[self.event_metadata_id(event_name, display_name)]
        for key, value in stats.items():
            self.set_stat(meta.stats.add(), key, value)


class XSpaceBuilder:
    def __init__(self, hostnames: list[str] | None = None) -> None:
        self.space = xplane_pb2.XSpace()
        self.space.hostnames.extend(hostnames or ["localhost"])

    def plane(self, name: str, plane_id: int | None = None) -> PlaneBuilder:
        plane = self.space.planes.add()
        plane.id = plane_id if plane_id is not None else len(self.space.planes) - 1
        plane.name = name
        return PlaneBuilder(plane)

    def gpu_plane(
        self, ordinal: int, core_count: int = 80, model: str = "NVIDIA H100"
    ) -> PlaneBuilder:
        plane = self.plane(f"/device:GPU:{ordinal}", plane_id=ordinal + 1)
        plane.plane_stat("devcap_core_count", Uint(core_count))
        plane.plane_stat("devcap_clock_rate_khz", Uint(1_755_000))
        plane.plane_stat("devcap_memory_size", Uint(80 * 2**30))
        plane.plane_stat("devcap_compute_cap_major", 9)
        plane.plane_stat("devcap_compute_cap_minor", 0)
        plane.plane_stat("gpu_model", model)
        return plane

    def error(self, message: str) -> None:
        self.space.errors.append(message)

    def warning(self, message: str) -> None:
        self.space.warnings.append(message)

    def serialize(self) -> bytes:
        return self.space.SerializeToString()


def rocm_kernel_details(
    grid: tuple[int, int, int] = (1, 1, 1),
    block: tuple[int, int, int] = (256, 1, 1),
    private_bytes: int = 0,
    group_bytes: int = 0,
    occupancy_percent: int = 50,
) -> str:
    """`kernel_details` as the ROCm tracer writes it (leading space; `group_mem` = LDS bytes)."""
    return (
        f" grid:{','.join(map(str, grid))} block:{','.join(map(str, block))} "
        f"private_mem:{private_bytes} group_mem:{group_bytes} occ_pct:{occupancy_percent}"
    )


def stats_plane(
    builder: XSpaceBuilder, name: str, plane_id: int | None = None, **stats: object
) -> PlaneBuilder:
    """A plane named `name` with the given plane stats (device_vendor="AMD", ...)."""
    plane = builder.plane(name, plane_id)
    for key, value in stats.items():
        plane.plane_stat(key, value)
    return plane


#: The ids TF <= 2.4 gives its own derived GPU lines: 0xDEADBEEF + k written as int32 and read
#: back sign-extended (Steps k=0, TensorFlow Name Scope k=2, TensorFlow Ops k=3).
TF24_STEPS_LINE_ID = -559038737
TF24_NAME_SCOPE_LINE_ID = -559038735
TF24_TF_OPS_LINE_ID = -559038734


def tf24_derived_lines(plane: PlaneBuilder) -> tuple[LineBuilder, LineBuilder, LineBuilder]:
    """The (Steps, TensorFlow Ops, TensorFlow Name Scope) lines TF <= 2.4 writes on a GPU plane,
    with its sign-extended ids; their events are the caller's (they repeat the kernels')."""
    return (plane.line("Steps", line_id=TF24_STEPS_LINE_ID),
            plane.line("TensorFlow Ops", line_id=TF24_TF_OPS_LINE_ID),
            plane.line("TensorFlow Name Scope", line_id=TF24_NAME_SCOPE_LINE_ID))


_US = 1_000_000  # ps


def tf24_gpu_space(num_gpus: int = 2, hlo: bool = False, host: str = "localhost") -> bytes:
    """TF 2.4 layout per GPU: one kernel stream and the producer's three derived lines with
    sign-extended ids; kernels typed by `level 0` and grouped. `hlo`: the kernels also name
    HLO ops (an XLA cluster), but the producer wrote no XLA lines."""
    b = XSpaceBuilder(hostnames=[host])
    for ordinal in range(num_gpus):
        gpu = b.gpu_plane(ordinal)
        stream = gpu.line("Stream #14(Kernel)", line_id=14)
        xla = {"hlo_op": "dot.1", "hlo_module": "cluster_0"} if hlo else {}
        stream.kernel("volta_sgemm", 10 * _US, 100 * _US, correlation_id=1, group_id=0,
                      **{"level 0": "dense/MatMul:MatMul"}, **xla)
        stream.kernel("volta_sgemm", 200 * _US, 50 * _US, correlation_id=2, group_id=0,
                      **{"level 0": "dense/MatMul:MatMul"}, **xla)
        steps, ops, scopes = tf24_derived_lines(gpu)
        steps.event("0", 10 * _US, 240 * _US, group_id=0, step_name="0")
        ops.event("dense/MatMul:MatMul", 10 * _US, 100 * _US)
        ops.event("dense/MatMul:MatMul", 200 * _US, 50 * _US)
        scopes.event("dense", 10 * _US, 240 * _US)
    return b.serialize()


def tf24_grouped_gpu_space(steps: int = 2, step_us: int = 300) -> bytes:
    """A whole TF 2.4 GPU capture as the producer writes it, already grouped: every host and
    device event of step k carries `group_id` k; the step's `FunctionRun` carries
    `step_name` "k" (the producer's implicit step marker; no event has `_r` or `step_num`);
    the GPU plane has its own Steps / TensorFlow Ops / Name Scope lines (sign-extended ids).

    Per step, from its start t0 (µs): FunctionRun [0, 250] (python); ExecutorState::Process
    [10, 60] with MatMul [20, 30] and a cudaLaunchKernel [25, 27] inside (tf_Compute);
    MemcpyHtoD [62, 67]; kernels [70, 170] and [180, 230] (stream 14); producer Steps event
    [62, 230]."""
    b = XSpaceBuilder(hostnames=["bert"])
    host = b.plane("/host:CPU")
    python = host.line("python", line_id=1)
    compute = host.line("tf_Compute", line_id=2)
    gpu = b.gpu_plane(0)
    stream = gpu.line("Stream #14(Kernel)", line_id=14)
    copies = gpu.line("Stream #15(MemcpyH2D)", line_id=15)
    own_steps, own_ops, own_scopes = tf24_derived_lines(gpu)
    for k in range(steps):
        t0 = k * step_us * _US
        corr = 10 * k
        python.event("FunctionRun", t0, 250 * _US, group_id=k, step_name=str(k))
        compute.event("ExecutorState::Process", t0 + 10 * _US, 50 * _US, group_id=k)
        compute.event("dense/MatMul:MatMul", t0 + 20 * _US, 10 * _US, group_id=k)
        compute.event("cudaLaunchKernel", t0 + 25 * _US, 2 * _US, group_id=k,
                      correlation_id=corr + 1)
        copies.memcpy("HtoD", t0 + 62 * _US, 5 * _US, corr + 3, num_bytes=4096, group_id=k)
        stream.kernel("volta_sgemm", t0 + 70 * _US, 100 * _US, corr + 1, group_id=k,
                      **{"level 0": "dense/MatMul:MatMul"})
        stream.kernel("volta_sgemm", t0 + 180 * _US, 50 * _US, corr + 2, group_id=k,
                      **{"level 0": "dense_1/MatMul:MatMul"})
        own_steps.event(str(k), t0 + 62 * _US, 168 * _US, group_id=k, step_name=str(k))
        own_ops.event("dense/MatMul:MatMul", t0 + 70 * _US, 100 * _US)
        own_ops.event("dense_1/MatMul:MatMul", t0 + 180 * _US, 50 * _US)
        own_scopes.event("dense", t0 + 70 * _US, 160 * _US)
    return b.serialize()
