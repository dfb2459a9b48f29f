"""Synthetic PyTorch profiler traces (Kineto Chrome-trace JSON) for exact-number unit tests.

The machine that makes this project's real captures has no GPU, so GPU-side layouts are
written here by hand, copying what real PyTorch traces hold event by event (checked against
public traces of PyTorch 1.9 on V100 and 2.x on V100/H100/B200; see
/work/shared/reference/pytorch_traces.md). Two layouts:

``variant="2.x"`` (PyTorch 2.x, fractional µs with ns resolution, int pid/tid):
    host ``cpu_op`` / ``user_annotation`` / ``cuda_runtime`` on ``pid=<process>``,
    ``tid=<thread>``; device ``kernel`` / ``gpu_memcpy`` / ``gpu_memset`` /
    ``gpu_user_annotation`` on ``pid=<device>``, ``tid=<stream>``; a launch is
    ``cudaLaunchKernel`` (args ``External id``, ``cbid`` 211, ``correlation``) with an
    ``ac2g`` flow: ``s`` on the runtime call, ``f`` (``bp: "e"``) on the kernel, ``id`` =
    correlation (``api="cuLaunchKernelEx"``: a ``cuda_driver`` call, as Triton kernels are
    launched, with no ``External id`` on the call or the kernel); ``[memory]`` is a
    ``cpu_instant_event`` instant with ``Total Allocated`` /
    ``Total Reserved``; collectives are ``record_param_comms`` (cpu_op) + ``nccl:<op>``
    (user_annotation, mirrored as a gpu_user_annotation) + an ``ncclDevKernel_*`` kernel with
    ``Collective name`` and the message sizes; ``ProfilerStep#N`` is a ``user_annotation`` and,
    when ``gpu_dur`` is given, also a ``gpu_user_annotation`` with the same ``External id``.
``variant="2021"`` (PyTorch 1.8/1.9, torch-tb-profiler's samples):
    categories ``Operator`` / ``Runtime`` / ``Kernel`` / ``Memcpy`` / ``Memset``, integer
    ``ts``/``dur``, string ``tid`` on ``X`` events (``"<thread>"``, ``"stream <n>"``) but an
    int ``tid`` on the flow start, flows ``cat: "async"``, ``name: "launch"``, lower-case
    ``external id`` (+ ``external ts`` on runtime calls) on device/runtime events,
    ``ProfilerStep#N`` as an ``Operator``, ``[memory]`` instants with no ``cat`` and no totals,
    no ``gpu_user_annotation``, no ``distributedInfo``.

Times are given in µs as the trace writes them; the builder never rounds (2021 needs ints).
Usage::

    t = KinetoTrace()
    t.profiler_step(1, ts=0.0, dur=100.0, gpu_ts=5.0, gpu_dur=90.0)
    mm = t.cpu_op("aten::mm", ts=10.0, dur=20.0, input_dims=[[8, 16], [16, 4]])
    t.launch_kernel(mm, "volta_sgemm_128x64_nn", launch_ts=12.0, launch_dur=5.0,
                    kernel_ts=20.0, kernel_dur=30.0)
    t.write(tmp_path / "run" / "worker0.1700000000000.pt.trace.json")
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

HOST_PID = 4242
HOST_TID = 4242
DEFAULT_STREAM = 7
NCCL_STREAM = 20
BASE_TS = 1_700_000_000_000.0  # µs; the value of real traces' clock (steady clock, not epoch)

#: ``deviceProperties`` of one device, as PyTorch 2.x writes it (an H100 SXM).
H100_PROPERTIES: dict[str, Any] = {
    "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 84929216512, "computeMajor": 9,
    "computeMinor": 0, "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048,
    "regsPerBlock": 65536, "warpSize": 32, "sharedMemPerBlock": 49152, "numSms": 132,
    "regsPerMultiprocessor": 65536, "sharedMemPerBlockOptin": 232448,
    "sharedMemPerMultiprocessor": 233472,
}
#: The 2021 layout's device (torch-tb-profiler's samples ran on V100s).
V100_PROPERTIES: dict[str, Any] = {
    "name": "Tesla V100-SXM2-32GB", "totalGlobalMem": 34089730048, "computeMajor": 7,
    "computeMinor": 0, "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048,
    "regsPerBlock": 65536, "regsPerMultiprocessor": 65536, "warpSize": 32,
    "sharedMemPerBlock": 49152, "sharedMemPerMultiprocessor": 98304, "numSms": 80,
    "sharedMemPerBlockOptin": 98304,
}

CATS = {
    "2.x": {"op": "cpu_op", "annotation": "user_annotation", "runtime": "cuda_runtime",
            "kernel": "kernel", "memcpy": "gpu_memcpy", "memset": "gpu_memset",
            "flow": "ac2g"},
    "2021": {"op": "Operator", "annotation": "Operator", "runtime": "Runtime",
             "kernel": "Kernel", "memcpy": "Memcpy", "memset": "Memset", "flow": "async"},
}
#: ``cbid`` of the CUDA runtime calls (CUPTI callback ids, as in real traces).
CBID = {"cudaLaunchKernel": 211, "cudaLaunchKernelExC": 430, "cudaMemcpyAsync": 41,
        "cudaMemsetAsync": 51, "cuLaunchKernelEx": 652}
#: Launch calls PyTorch 2.x writes as ``cuda_driver`` (Triton / torch.compile kernels): no
#: ``External id`` on the call nor on its kernel; only ``correlation`` and the ac2g flow link
#: them, and the call's enclosing host op is found by time.
DRIVER_LAUNCHES = frozenset({"cuLaunchKernelEx"})


class KinetoTrace:
    """Collects events in the order PyTorch writes them and dumps one trace JSON object."""

    def __init__(self, *, variant: str = "2.x", pid: int = HOST_PID, tid: int = HOST_TID,
                 devices: int = 1, device_properties: dict[str, Any] | None = None,
                 rank: int | None = None, world_size: int | None = None,
                 backend: str = "nccl", trace_start: float = 0.0,
                 trace_end: float | None = None) -> None:
        if variant not in CATS:
            raise ValueError(f"variant must be one of {sorted(CATS)}")
        self.variant, self.pid, self.tid = variant, pid, tid
        self.cats = CATS[variant]
        self.devices = devices
        props = device_properties or (V100_PROPERTIES if variant == "2021" else H100_PROPERTIES)
        self.device_properties = [{"id": i, **props} for i in range(devices)]
        self.rank, self.world_size, self.backend = rank, world_size, backend
        self.trace_start, self.trace_end = trace_start, trace_end
        self.events: list[dict[str, Any]] = []
        self._external_id = 0
        self._correlation = 1000
        self._ev_idx = 0
        self._streams: set[tuple[int, int]] = set()
        self._threads: set[int] = {tid}

    # -- ids and small helpers ----------------------------------------------------------

    def _next_external(self) -> int:
        self._external_id += 1
        return self._external_id

    def _next_correlation(self) -> int:
        self._correlation += 1
        return self._correlation

    def _ts(self, t: float) -> float | int:
        """An absolute trace timestamp for a test time ``t`` (µs from the capture start)."""
        if self.variant == "2021":
            if int(t) != t:
                raise ValueError("the 2021 layout has integer microseconds")
            return int(BASE_TS) + int(t)
        return BASE_TS + t

    def _dur(self, d: float) -> float | int:
        if self.variant == "2021":
            if int(d) != d:
                raise ValueError("the 2021 layout has integer microseconds")
            return int(d)
        return d

    def _host_tid(self, tid: int | None) -> int | str:
        t = self.tid if tid is None else tid
        self._threads.add(t)
        return str(t) if self.variant == "2021" else t

    def _stream_tid(self, stream: int) -> int | str:
        return f"stream {stream}" if self.variant == "2021" else stream

    def _x(self, cat: str, name: str, pid: int | str, tid: int | str, ts: float, dur: float,
           args: dict[str, Any]) -> dict[str, Any]:
        event = {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid,
                 "ts": self._ts(ts), "dur": self._dur(dur), "args": args}
        self.events.append(event)
        return event

    def _op_args(self, ext: int, extra: dict[str, Any]) -> dict[str, Any]:
        if self.variant == "2021":
            return {"Device": self.pid, "External id": ext, "Trace name": "PyTorch Profiler",
                    "Trace iteration": 0, **extra}
        args = {"External id": ext, "Record function id": 0, **extra, "Ev Idx": self._ev_idx}
        self._ev_idx += 1
        return args

    # -- host events --------------------------------------------------------------------

    def cpu_op(self, name: str, ts: float, dur: float, *, tid: int | None = None,
               input_dims: list[list[int]] | None = None,
               input_types: list[str] | None = None,
               sequence_number: int | None = None, args: dict[str, Any] | None = None
               ) -> int:
        """An operator (``aten::*`` or any ``cpu_op``); returns its ``External id``."""
        ext = self._next_external()
        extra: dict[str, Any] = {}
        if sequence_number is not None:
            extra["Sequence number"] = sequence_number
            extra["Fwd thread id"] = 0
        if input_dims is not None:
            extra["Input Dims"] = input_dims
            extra["Input type"] = input_types or ["float"] * len(input_dims)
            if self.variant == "2.x":
                extra["Input Strides"] = [[] for _ in input_dims]
                extra["Concrete Inputs"] = ["" for _ in input_dims]
        extra.update(args or {})
        self._x(self.cats["op"], name, self.pid, self._host_tid(tid), ts, dur,
                self._op_args(ext, extra))
        return ext

    def user_annotation(self, name: str, ts: float, dur: float, *, tid: int | None = None
                        ) -> int:
        """A ``record_function`` range (2021: an ``Operator``); returns its ``External id``."""
        ext = self._next_external()
        self._x(self.cats["annotation"], name, self.pid, self._host_tid(tid), ts, dur,
                self._op_args(ext, {}))
        return ext

    def gpu_user_annotation(self, name: str, ext: int, ts: float, dur: float, *,
                            device: int = 0, stream: int = DEFAULT_STREAM) -> None:
        """A host range mirrored on a GPU stream (2.x only), sharing the host range's id."""
        if self.variant == "2021":
            raise ValueError("the 2021 layout has no gpu_user_annotation")
        self._streams.add((device, stream))
        self._x("gpu_user_annotation", name, device, stream, ts, dur, {"External id": ext})

    def profiler_step(self, n: int, ts: float, dur: float, *, gpu_ts: float | None = None,
                      gpu_dur: float | None = None, device: int = 0,
                      stream: int = DEFAULT_STREAM) -> int:
        """``ProfilerStep#n`` on the host, and on the GPU stream too when ``gpu_dur`` is given
        (PyTorch >= ~2.4 writes the step twice: the same step, not a second one)."""
        ext = self.user_annotation(f"ProfilerStep#{n}", ts, dur)
        if gpu_dur is not None:
            self.gpu_user_annotation(f"ProfilerStep#{n}", ext,
                                     ts if gpu_ts is None else gpu_ts, gpu_dur,
                                     device=device, stream=stream)
        return ext

    # -- launches and device events -----------------------------------------------------

    def _runtime(self, name: str, ext: int, corr: int, ts: float, dur: float,
                 tid: int | None) -> None:
        if name in DRIVER_LAUNCHES:
            if self.variant == "2021":
                raise ValueError("the 2021 layout has no cuda_driver events")
            self._x("cuda_driver", name, self.pid, self._host_tid(tid), ts, dur,
                    {"cbid": CBID[name], "correlation": corr})
            return
        if self.variant == "2021":
            args: dict[str, Any] = {"cbid": CBID.get(name, 0), "correlation": corr,
                                    "external id": ext, "external ts": self._ts(ts)}
        else:
            args = {"External id": ext, "cbid": CBID.get(name, 0), "correlation": corr}
        self._x(self.cats["runtime"], name, self.pid, self._host_tid(tid), ts, dur, args)

    def _flow(self, corr: int, host_tid: int | None, launch_ts: float, device: int,
              stream: int, device_ts: float) -> None:
        name = "launch" if self.variant == "2021" else "ac2g"
        cat = self.cats["flow"]
        start_tid = self.tid if host_tid is None else host_tid  # int on ``s``, also in 2021
        self.events.append({"ph": "s", "id": corr, "pid": self.pid, "tid": start_tid,
                            "ts": self._ts(launch_ts), "cat": cat, "name": name})
        self.events.append({"ph": "f", "id": corr, "pid": device,
                            "tid": self._stream_tid(stream), "ts": self._ts(device_ts),
                            "cat": cat, "name": name, "bp": "e"})

    def _device_args(self, ext: int, corr: int, device: int, stream: int) -> dict[str, Any]:
        if self.variant == "2021":
            return {"device": device, "context": 1, "stream": stream, "correlation": corr,
                    "external id": ext}
        return {"External id": ext, "device": device, "context": 1, "stream": stream,
                "correlation": corr}

    def launch_kernel(self, op_ext: int, name: str, *, launch_ts: float, launch_dur: float,
                      kernel_ts: float, kernel_dur: float, device: int = 0,
                      stream: int = DEFAULT_STREAM, tid: int | None = None,
                      grid: tuple[int, int, int] = (128, 1, 1),
                      block: tuple[int, int, int] = (256, 1, 1),
                      registers_per_thread: int = 32, shared_memory: int = 0,
                      occupancy_pct: float = 50, blocks_per_sm: float = 0.969697,
                      warps_per_sm: float = 7.757576,
                      extra_args: dict[str, Any] | None = None,
                      api: str = "cudaLaunchKernel") -> int:
        """``api`` (``cudaLaunchKernel``, ``cudaLaunchKernelExC`` or the driver's
        ``cuLaunchKernelEx``) under the operator ``op_ext`` (place ``launch_ts`` inside that
        operator's span) and the kernel on ``device``/``stream``; returns the correlation.
        A driver launch carries no ``External id`` (call and kernel)."""
        corr = self._next_correlation()
        self._streams.add((device, stream))
        self._runtime(api, op_ext, corr, launch_ts, launch_dur, tid)
        args = self._device_args(op_ext, corr, device, stream)
        if api in DRIVER_LAUNCHES:
            del args["External id"]
        args["queued"] = 0
        args.update({
            "registers per thread": registers_per_thread, "shared memory": shared_memory,
            "blocks per SM": blocks_per_sm, "warps per SM": warps_per_sm,
            "grid": list(grid), "block": list(block),
            "est. achieved occupancy %": occupancy_pct,
        })
        args.update(extra_args or {})
        self._x(self.cats["kernel"], name, device, self._stream_tid(stream), kernel_ts,
                kernel_dur, args)
        self._flow(corr, tid, launch_ts, device, stream, kernel_ts)
        return corr

    def memcpy(self, op_ext: int, kind: str, nbytes: int, *, launch_ts: float,
               launch_dur: float, copy_ts: float, copy_dur: float, device: int = 0,
               stream: int = DEFAULT_STREAM, tid: int | None = None) -> int:
        """``cudaMemcpyAsync`` + ``gpu_memcpy`` named ``Memcpy <kind>`` (``kind`` e.g.
        ``"HtoD (Pinned -> Device)"``, ``"DtoH (Device -> Pageable)"``, ``"DtoD (Device ->
        Device)"``) with ``bytes`` and ``memory bandwidth (GB/s)``."""
        corr = self._next_correlation()
        self._streams.add((device, stream))
        self._runtime("cudaMemcpyAsync", op_ext, corr, launch_ts, launch_dur, tid)
        args = self._device_args(op_ext, corr, device, stream)
        args.update({"bytes": nbytes, "memory bandwidth (GB/s)": nbytes / (copy_dur * 1e3)})
        self._x(self.cats["memcpy"], f"Memcpy {kind}", device, self._stream_tid(stream),
                copy_ts, copy_dur, args)
        self._flow(corr, tid, launch_ts, device, stream, copy_ts)
        return corr

    def memset(self, op_ext: int, nbytes: int, *, launch_ts: float, launch_dur: float,
               set_ts: float, set_dur: float, device: int = 0, stream: int = DEFAULT_STREAM,
               tid: int | None = None) -> int:
        """``cudaMemsetAsync`` + ``gpu_memset`` ``Memset (Device)`` with ``bytes``."""
        corr = self._next_correlation()
        self._streams.add((device, stream))
        self._runtime("cudaMemsetAsync", op_ext, corr, launch_ts, launch_dur, tid)
        args = self._device_args(op_ext, corr, device, stream)
        args.update({"bytes": nbytes, "memory bandwidth (GB/s)": nbytes / (set_dur * 1e3)})
        self._x(self.cats["memset"], "Memset (Device)", device, self._stream_tid(stream),
                set_ts, set_dur, args)
        self._flow(corr, tid, launch_ts, device, stream, set_ts)
        return corr

    def nccl_all_reduce(self, *, ts: float, dur: float, kernel_ts: float, kernel_dur: float,
                        nelems: int, group_size: int = 2, device: int = 0,
                        stream: int = NCCL_STREAM, dtype: str = "Float",
                        kernel_name: str = "ncclDevKernel_AllReduce_Sum_f32_RING_LL("
                                           "ncclDevKernelArgsStorage<4096ul>)",
                        mirror_on_gpu: bool = True, tid: int | None = None) -> int:
        """A 2.x NCCL all-reduce: ``record_param_comms`` (cpu_op, message args) over
        ``nccl:all_reduce`` (user_annotation, also as gpu_user_annotation when
        ``mirror_on_gpu``), whose ``cudaLaunchKernel`` starts the collective kernel on the
        communication stream. Host spans: record_param_comms [ts, ts+dur], the annotation
        inside it, the launch inside that. Returns the kernel's correlation."""
        if self.variant == "2021":
            raise ValueError("write 2021 collectives with cpu_op/launch_kernel by hand")
        ranks = str(list(range(group_size)))
        comm = {"Collective name": "allreduce", "In msg nelems": nelems,
                "Out msg nelems": nelems, "Group size": group_size, "dtype": dtype,
                "In split size": "[]", "Out split size": "[]", "Process Group Name": "0",
                "Process Group Description": "default_pg", "Process Group Ranks": ranks}
        self.cpu_op("record_param_comms", ts, dur, tid=tid,
                    args={**comm, "Rank": self.rank or 0, "Global rank start": 0,
                          "Global rank stride": 1})
        inner_ts, inner_dur = ts + dur / 4, dur / 2
        ann = self.user_annotation("nccl:all_reduce", inner_ts, inner_dur, tid=tid)
        if mirror_on_gpu:
            self.gpu_user_annotation("nccl:all_reduce", ann, kernel_ts, kernel_dur,
                                     device=device, stream=stream)
        return self.launch_kernel(
            ann, kernel_name, launch_ts=inner_ts + inner_dur / 4, launch_dur=inner_dur / 2,
            kernel_ts=kernel_ts, kernel_dur=kernel_dur, device=device, stream=stream, tid=tid,
            grid=(2, 1, 1), block=(512, 1, 1), registers_per_thread=96, shared_memory=103808,
            occupancy_pct=0, blocks_per_sm=0.015152, warps_per_sm=0.242424, extra_args=comm)

    def memory(self, ts: float, nbytes: int, *, addr: int, total_allocated: int | None = None,
               total_reserved: int | None = None, device_type: int = 1, device_id: int = 0,
               tid: int | None = None) -> None:
        """A ``[memory]`` instant: ``nbytes`` > 0 allocates, < 0 frees. ``device_type`` 1 is
        CUDA (``device_id`` the GPU), 0 is CPU (``device_id`` -1). The 2021 layout has no
        totals, no ``cat`` and an int ``tid``."""
        t = self.tid if tid is None else tid
        if self.variant == "2021":
            self.events.append({"ph": "i", "s": "t", "name": "[memory]", "pid": self.pid,
                                "tid": t, "ts": self._ts(ts),
                                "args": {"Device Type": device_type, "Device Id": device_id,
                                         "Bytes": nbytes}})
            return
        if total_allocated is None or total_reserved is None:
            raise ValueError("2.x [memory] events carry Total Allocated and Total Reserved")
        args = {"Total Reserved": total_reserved, "Total Allocated": total_allocated,
                "Bytes": nbytes, "Addr": addr, "Device Id": device_id,
                "Device Type": device_type, "Ev Idx": self._ev_idx}
        self._ev_idx += 1
        self.events.append({"ph": "i", "cat": "cpu_instant_event", "s": "t",
                            "name": "[memory]", "pid": self.pid, "tid": t,
                            "ts": self._ts(ts), "args": args})

    # -- output -------------------------------------------------------------------------

    def _metadata(self) -> list[dict[str, Any]]:
        ts = self._ts(self.trace_start)
        meta: list[dict[str, Any]] = []

        def add(name: str, pid: int | str, tid: int | str, args: dict[str, Any]) -> None:
            meta.append({"name": name, "ph": "M", "ts": ts, "pid": pid, "tid": tid,
                         "args": args})

        add("process_name", self.pid, 0, {"name": "python"})
        add("process_labels", self.pid, 0, {"labels": "CPU"})
        if self.variant == "2.x":
            add("process_sort_index", self.pid, 0, {"sort_index": self.pid})
        for dev in range(self.devices):
            add("process_name", dev, 0, {"name": "python"})
            add("process_labels", dev, 0, {"labels": f"GPU {dev}"})
            if self.variant == "2.x":
                add("process_sort_index", dev, 0, {"sort_index": 5000000 + dev})
        for dev, stream in sorted(self._streams):
            if self.variant == "2.x":
                add("thread_name", dev, stream, {"name": f"stream {stream} "})
                add("thread_sort_index", dev, stream, {"sort_index": stream})
        for t in sorted(self._threads):
            add("thread_name", self.pid, self._host_tid(t), {"name": f"thread {t} (python)"})
            if self.variant == "2.x":
                add("thread_sort_index", self.pid, t, {"sort_index": t})
        return meta

    def _window_end(self) -> float:
        if self.trace_end is not None:
            return self.trace_end
        ends = [float(e["ts"]) + float(e.get("dur", 0)) for e in self.events]
        base = int(BASE_TS) if self.variant == "2021" else BASE_TS
        return max(ends, default=base) - base

    def to_dict(self) -> dict[str, Any]:
        """The whole trace object, keys in the order PyTorch writes them."""
        end = self._window_end()
        start_ts = self._ts(self.trace_start)
        span_pid = "Traces" if self.variant == "2021" else "Spans"
        tail: list[dict[str, Any]] = [
            {"ph": "X", "cat": "Trace", "ts": start_ts,
             "dur": self._dur(end - self.trace_start), "pid": span_pid,
             "tid": "PyTorch Profiler", "name": "PyTorch Profiler (0)",
             "args": {"Op count": 0}},
            {"name": "Iteration Start: PyTorch Profiler", "ph": "i", "s": "g",
             "pid": "Traces", "tid": "Trace PyTorch Profiler", "ts": start_ts},
            {"name": "Record Window End", "ph": "i", "s": "g", "pid": "", "tid": "",
             "ts": self._ts(end)},
        ]
        doc: dict[str, Any] = {"schemaVersion": 1, "deviceProperties": self.device_properties}
        if self.variant == "2.x":
            if self.rank is not None:
                size = self.world_size or 1
                doc["distributedInfo"] = {
                    "backend": self.backend, "rank": self.rank, "world_size": size,
                    "pg_count": 1,
                    "pg_config": [{"pg_name": "0", "pg_desc": "default_pg",
                                   "backend_config": f"cuda:{self.backend}", "pg_size": size,
                                   "ranks": list(range(size))}],
                    "nccl_version": "2.21.5"}
            doc.update({"cupti_version": 24, "cuda_runtime_version": 12040,
                        "cuda_driver_version": 12040, "trace_id": "0" * 32,
                        "record_shapes": 1, "profile_memory": 1,
                        "displayTimeUnit": "ms", "baseTimeNanoseconds": 1700000000000000000})
        doc["traceEvents"] = [*self._metadata(), *self.events, *tail]
        if self.variant == "2.x":
            doc["traceName"] = "synthetic.pt.trace.json"
        return doc

    def write(self, path: Path, *, use_gzip: bool | None = None) -> Path:
        """Write the trace (gzip when the name ends in ``.gz`` or ``use_gzip``)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        data = json.dumps(self.to_dict(), indent=1).encode()
        if use_gzip or (use_gzip is None and path.name.endswith(".gz")):
            path.write_bytes(gzip.compress(data, mtime=0))
        else:
            path.write_bytes(data)
        return path


def gpu_training_step_trace(variant: str = "2.x", *, rank: int | None = None,
                            world_size: int | None = None) -> KinetoTrace:
    """A small, hand-checkable GPU training trace: two steps of ``aten::mm`` + ``aten::add_``
    with their kernels, a host-to-device copy, a memset and (2.x) an NCCL all-reduce and
    CUDA ``[memory]`` events. Times (µs from the capture start), per step ``s`` at
    ``t0 = 1000 * s``:

        ProfilerStep#s          host [t0, t0+900]       GPU (2.x) [t0+100, t0+950]
        aten::copy_             host [t0+10, t0+60]     Memcpy HtoD 4096 B [t0+100, t0+120]
        aten::mm                host [t0+100, t0+200]   kernel gemm [t0+150, t0+450]
        aten::zero_             host [t0+250, t0+300]   Memset 1024 B [t0+460, t0+465]
        aten::add_              host [t0+400, t0+450]   kernel add  [t0+470, t0+500]
        record_param_comms      host [t0+600, t0+700]   AllReduce   [t0+700, t0+900] (2.x)

    Every device event of a step ends by the step's host end (t0+900) except the step's GPU
    mirror (to t0+950). Per step: 2 kernels + 1 all-reduce kernel (2.x), device busy time
    20 (copy) + 300 + 5 (memset) + 30 + 200 = 555 µs. The 2021 layout has no all-reduce, no
    GPU step mirror, and [memory] instants without totals."""
    t = KinetoTrace(variant=variant, rank=rank, world_size=world_size)
    allocated = 0
    for step in (1, 2):
        t0 = 1000 * step
        if variant == "2.x":
            t.profiler_step(step, t0, 900, gpu_ts=t0 + 100, gpu_dur=850)
        else:
            t.profiler_step(step, t0, 900)
        cp = t.cpu_op("aten::copy_", t0 + 10, 50, input_dims=[[32, 32], [32, 32], []])
        t.memcpy(cp, "HtoD (Pinned -> Device)", 4096, launch_ts=t0 + 20, launch_dur=10,
                 copy_ts=t0 + 100, copy_dur=20)
        mm = t.cpu_op("aten::mm", t0 + 100, 100, input_dims=[[32, 64], [64, 32]])
        if variant == "2.x":
            allocated += 4096
            t.memory(t0 + 105, 4096, addr=0x7F0000000000 + step * 0x1000,
                     total_allocated=allocated, total_reserved=2097152)
        t.launch_kernel(mm, "sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x32",
                        launch_ts=t0 + 120, launch_dur=20, kernel_ts=t0 + 150,
                        kernel_dur=300, grid=(4, 4, 1), block=(128, 1, 1),
                        registers_per_thread=168, shared_memory=98304, occupancy_pct=6)
        zr = t.cpu_op("aten::zero_", t0 + 250, 50, input_dims=[[256]])
        t.memset(zr, 1024, launch_ts=t0 + 260, launch_dur=10, set_ts=t0 + 460, set_dur=5)
        add = t.cpu_op("aten::add_", t0 + 400, 50, input_dims=[[32, 32], [32, 32], []])
        t.launch_kernel(add, "void at::native::vectorized_elementwise_kernel<4, "
                        "at::native::CUDAFunctor_add<float>, std::array<char*, 3ul> >(int, "
                        "at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)",
                        launch_ts=t0 + 410, launch_dur=15, kernel_ts=t0 + 470, kernel_dur=30)
        if variant == "2.x":
            t.nccl_all_reduce(ts=t0 + 600, dur=100, kernel_ts=t0 + 700, kernel_dur=200,
                              nelems=2048, group_size=world_size or 2)
            allocated -= 4096
            t.memory(t0 + 850, -4096, addr=0x7F0000000000 + step * 0x1000,
                     total_allocated=allocated, total_reserved=2097152)
        else:
            t.memory(t0 + 105, 4096, addr=0)
            t.memory(t0 + 850, -4096, addr=0)
    return t


def many_steps_trace_bytes(steps: int) -> bytes:
    """A long 2.x trace for streaming and memory tests, written with Kineto's ``indent=1``
    (/tmp/ktest/mkbig.py's layout, docs/pytorch.md "Figures"): per step ``s`` at
    ``t0 = 1000 * s`` 8 ops, each with a nested op, a launch, its kernel and two ``[memory]``
    events."""
    t = KinetoTrace(rank=0, world_size=1)
    for s in range(steps):
        t0 = 1000.0 * s
        t.profiler_step(s, t0, 900.0, gpu_ts=t0 + 100, gpu_dur=850.0)
        for k in range(8):
            a = t0 + 10 + 100 * k
            t.cpu_op("aten::linear", a, 90.0, input_dims=[[32, 64], [64, 32], [32]])
            inner = t.cpu_op("aten::addmm", a + 5, 60.0, input_dims=[[32], [32, 64], [64, 32]])
            t.launch_kernel(inner, "sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n", launch_ts=a + 10,
                            launch_dur=5.0, kernel_ts=a + 20, kernel_dur=50.0)
            address = 0x7F0000000000 + k * 0x1000
            t.memory(a + 8, 4096, addr=address, total_allocated=4096, total_reserved=1 << 24)
            t.memory(a + 80, -4096, addr=address, total_allocated=0, total_reserved=1 << 24)
    return json.dumps(t.to_dict(), indent=1).encode()
